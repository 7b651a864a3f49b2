/**
 * Settles with `promise`, or rejects with `onTimeout()` once `timeoutMs` have passed. The late
 * promise is left to settle on its own: its rejection is swallowed so that a call that outlives
 * its caller can never surface as an unhandled rejection.
 */
export function withTimeout<T>(
  promise: Promise<T>,
  timeoutMs: number,
  onTimeout: () => Error = () => new Error(`Timed out after ${timeoutMs} ms`),
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(onTimeout()), timeoutMs);
  });
  promise.catch(() => undefined);
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
