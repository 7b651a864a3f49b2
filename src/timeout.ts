import { StoreTimeoutError } from './errors';

/**
 * Settles with `promise`, or rejects with StoreTimeoutError after `timeoutMs`. The late
 * promise is left to settle on its own: its rejection is swallowed so that a store call
 * that outlives its request can never surface as an unhandled rejection.
 */
export function withTimeout<T>(promise: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new StoreTimeoutError(timeoutMs)), timeoutMs);
  });
  promise.catch(() => undefined);
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
