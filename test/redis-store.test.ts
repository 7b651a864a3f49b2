import { createRedisStore, type RateLimitRule } from '../src';
import { counterKey } from '../src/keys';
import type { Redis } from 'ioredis';

import {
  closeClients,
  connectRedis,
  startRedisServer,
  uniquePrefix,
  type RedisProcess,
} from './support/redis';

afterAll(closeClients);

const rule: RateLimitRule = {
  action: 'a',
  algorithm: 'FIXED_WINDOW',
  windowSeconds: 60,
  limit: 2,
  cost: 1,
};

test('a full window in its last millisecond asks for a wait of at most that millisecond, not a whole window', async () => {
  const client = await connectRedis();
  const prefix = uniquePrefix();
  const store = createRedisStore({ client, prefix });
  const key = counterKey(prefix, 'id', rule);
  const waits: number[] = [];
  for (let i = 0; i < 300; i++) {
    await client.set(key, String(rule.limit), 'PX', 2);
    const d = await store.hit('id', [rule]);
    if (!d.allowed) waits.push(d.limits[0]?.retryAfterMs ?? -1);
  }
  expect(waits.length).toBeGreaterThan(0);
  for (const wait of waits) {
    expect(wait).toBeGreaterThanOrEqual(1);
    expect(wait).toBeLessThanOrEqual(2);
  }
});

test('the store refuses a client that is not ioredis, and a prefix with a brace', async () => {
  expect(() => createRedisStore({ client: {} as never })).toThrow(/ioredis/);
  const client = await connectRedis();
  expect(() => createRedisStore({ client, prefix: 'a{b' })).toThrow(/prefix/);
});

test('the store switches off the resending of in-flight commands on its client', async () => {
  const client = await connectRedis();
  expect(client.options.autoResendUnfulfilledCommands).toBe(true);
  createRedisStore({ client, prefix: uniquePrefix() });
  expect(client.options.autoResendUnfulfilledCommands).toBe(false);
});

describe('coalescing', () => {
  let redis: RedisProcess;
  beforeAll(async () => {
    redis = await startRedisServer();
  });
  afterAll(() => redis.stop());

  const scriptCalls = async (client: Redis): Promise<number> => {
    const stats = await client.info('commandstats');
    return [...stats.matchAll(/cmdstat_eval(?:sha)?:calls=(\d+)/g)].reduce(
      (n, m) => n + Number(m[1]),
      0,
    );
  };

  test('hits made in one turn of the event loop share one script call, each decided on its own', async () => {
    const client = await connectRedis({}, redis.url);
    const store = createRedisStore({ client, prefix: uniquePrefix() });
    await store.hit('warm-up', [rule]);
    const before = await scriptCalls(client);
    const decisions = await Promise.all(
      ['a', 'b', 'a', 'c', 'a', 'b'].map((id) =>
        store.hit(id, [rule, { ...rule, action: 'z', limit: 5 }]),
      ),
    );
    expect(await scriptCalls(client)).toBe(before + 1);
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, true, false, true]);
    expect(decisions[4]?.limits.map((l) => l.remaining)).toEqual([0, 3]);
  });

  test('maxBatch bounds a call; maxBatch 1 sends every hit on its own', async () => {
    const client = await connectRedis({}, redis.url);
    const one = createRedisStore({ client, prefix: uniquePrefix(), maxBatch: 1 });
    const three = createRedisStore({ client, prefix: uniquePrefix(), maxBatch: 3 });
    await Promise.all([one.hit('w', [rule]), three.hit('w', [rule])]);
    let before = await scriptCalls(client);
    await Promise.all(Array.from({ length: 7 }, (_, i) => one.hit(`id-${i}`, [rule])));
    expect(await scriptCalls(client)).toBe(before + 7);
    before = await scriptCalls(client);
    await Promise.all(Array.from({ length: 7 }, (_, i) => three.hit(`id-${i}`, [rule])));
    expect(await scriptCalls(client)).toBe(before + 3);
    expect(() => createRedisStore({ client, maxBatch: 0 })).toThrow(/maxBatch/);
  });
});
