import { asError, RateLimitIdentityError, UnauthenticatedError } from '../errors';

/**
 * The identity `source` gives, as the string counters are keyed by. Throws UnauthenticatedError
 * when it gives nobody, and RateLimitIdentityError when it throws or gives something that is not
 * an identity: an object, array, boolean or NaN is never turned into a string, since every such
 * value would become one shared counter (`[object Object]`) and let one client block everyone.
 * A Promise is awaited; a plain value costs no extra turn of the event loop.
 */
export function identityFrom(source: () => unknown, what: string): string | Promise<string> {
  let raw: unknown;
  try {
    raw = source();
  } catch (error) {
    throw new RateLimitIdentityError(asError(error), `${what} threw`);
  }
  if (isThenable(raw)) {
    return Promise.resolve(raw).then(
      (value) => checked(value, what),
      (error: unknown) => {
        throw new RateLimitIdentityError(asError(error), `${what} rejected`);
      },
    );
  }
  return checked(raw, what);
}

function checked(value: unknown, what: string): string {
  if (value === undefined || value === null || value === '') throw new UnauthenticatedError();
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  const problem = `${what} returned ${describe(value)}; it must return a non-empty string or a finite number (or null/undefined for nobody)`;
  throw new RateLimitIdentityError(new TypeError(problem), problem);
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}

/** What kind of value `value` is: its type, never its content, which may be a secret. */
function describe(value: unknown): string {
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'number') return String(value); // NaN or Infinity
  if (typeof value === 'object') return 'an object';
  return `a ${typeof value}`;
}
