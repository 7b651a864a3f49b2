import type { Redis } from 'ioredis';

import { createMemoryStore, type RateLimitRule, type RateLimitStore } from '../../src';
import { releaseTogether } from '../support/barrier';
import { naiveHit } from '../support/naive-limiter';
import { closeClients, connectRedis, keysUnder, uniquePrefix } from '../support/redis';
import { openedRedisStore } from '../support/stores';

const WORKERS = 20;
const HITS_PER_WORKER = 5;
const LIMIT = 10;
const rule: RateLimitRule = {
  action: 'submit',
  algorithm: 'FIXED_WINDOW',
  windowSeconds: 60,
  limit: LIMIT,
  cost: 1,
};

/** 20 workers, each with its own store (and, for Redis, its own connection), 5 hits each. */
async function fireTogether(
  storeFor: (worker: number) => Promise<RateLimitStore>,
): Promise<boolean[]> {
  const results = await releaseTogether(WORKERS, async (i) => {
    const store = await storeFor(i);
    return () =>
      Promise.all(Array.from({ length: HITS_PER_WORKER }, () => store.hit('team-1', [rule])));
  });
  return results.flat().map((d) => d.allowed);
}

afterAll(closeClients);

describe('100 hits released at one instant, limit 10', () => {
  test('Redis store: exactly 10 pass across 20 connections', async () => {
    const prefix = uniquePrefix();
    const allowed = await fireTogether(async () =>
      openedRedisStore({ client: await connectRedis(), prefix }),
    );
    expect(allowed.filter(Boolean)).toHaveLength(LIMIT);
    expect(allowed.filter((a) => !a)).toHaveLength(WORKERS * HITS_PER_WORKER - LIMIT);

    const admin = await connectRedis();
    const keys = await keysUnder(admin, prefix);
    expect(keys).toHaveLength(1);
    expect(Number(await admin.get(keys[0] as string))).toBe(LIMIT);
  });

  test('memory store: exactly 10 pass across 20 workers sharing it', async () => {
    const store = createMemoryStore();
    const allowed = await fireTogether(async () => store);
    expect(allowed.filter(Boolean)).toHaveLength(LIMIT);
    expect(allowed.filter((a) => !a)).toHaveLength(WORKERS * HITS_PER_WORKER - LIMIT);
  });

  test('control: a read-then-write limiter on the same Redis lets more than 10 through', async () => {
    const key = `${uniquePrefix()}naive`;
    const results = await releaseTogether(WORKERS, async () => {
      const client: Redis = await connectRedis();
      return () =>
        Promise.all(
          Array.from({ length: HITS_PER_WORKER }, () => naiveHit(client, key, LIMIT, 60)),
        );
    });
    const passed = results.flat().filter(Boolean).length;
    expect(passed).toBeGreaterThan(LIMIT);
  });
});
