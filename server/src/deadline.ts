/**
 * Settles with `promise`, or rejects once `ms` have passed. The late promise is left to settle
 * on its own, its rejection swallowed: a Redis call that outlives its wait must not surface as
 * an unhandled rejection and stop the process.
 */
export function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  promise.catch(() => undefined);
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}
