import type { Redis } from 'ioredis';

/**
 * The limiter this project exists to replace: read the count, compare, then write, in three
 * round trips. Kept only as the control that shows the concurrency tests can see a race.
 */
export async function naiveHit(
  client: Redis,
  key: string,
  limit: number,
  windowSeconds: number,
): Promise<boolean> {
  const used = Number((await client.get(key)) ?? '0');
  if (used >= limit) return false;
  await client.multi().incr(key).expire(key, windowSeconds).exec();
  return true;
}
