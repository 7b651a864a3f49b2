import { createRedisStore, type RateLimitRule } from '../src';
import { counterKey } from '../src/keys';
import { closeClients, connectRedis, uniquePrefix } from './support/redis';

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
