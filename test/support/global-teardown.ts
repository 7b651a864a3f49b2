/** Stops the Redis the global setup started (a REDIS_URL given from outside is left alone). */
export default async function globalTeardown(): Promise<void> {
  await globalThis.__providedRedis?.stop();
}
