import type { Redis } from 'ioredis';

import { createRedisStore, type RateLimitRule } from '../../src';
import { counterKey } from '../../src/stores/keys';
import { REFUND_LUA, packRefund, parseRefundReply } from '../../src/stores/redis/refund-script';
import {
  HIT_LUA,
  packHits,
  parseHitReply,
  type Receipt,
  type ScriptDecision,
} from '../../src/stores/redis/hit-script';
import {
  closeClients,
  connectRedis,
  startRedisServer,
  uniquePrefix,
  type RedisProcess,
} from '../support/redis';
import { RATE_ALGORITHMS } from '../support/algorithms';

/*
 * The receipts of lua/hit.lua and lua/refund.lua on one Redis, through their wire format.
 * Only a hit on a Redis Cluster whose limits span several hash tags uses them (the store and
 * its guarantees are tested on a real cluster in test/cluster/redis-cluster.test.ts).
 */

let noExpireTime: RedisProcess | undefined;
afterAll(async () => {
  await closeClients();
  await noExpireTime?.stop();
});

const rules: RateLimitRule[] = RATE_ALGORITHMS.map((algorithm) => ({
  action: 'gb',
  algorithm,
  windowSeconds: 60,
  limit: 5,
  cost: 2,
}));

async function hitReply(
  client: Redis,
  prefix: string,
  receipts: boolean,
  of: readonly RateLimitRule[] = rules,
): Promise<unknown[]> {
  const { keys, argv } = packHits(prefix, [
    { kind: receipts ? 'take' : 'hit', identity: 'id', rules: of },
  ]);
  return (await client.eval(HIT_LUA, keys.length, ...keys, ...argv)) as unknown[];
}

async function take(
  client: Redis,
  prefix: string,
  of: readonly RateLimitRule[] = rules,
): Promise<readonly Receipt[]> {
  const hit = { kind: 'take' as const, identity: 'id', rules: of };
  const [decision] = parseHitReply(await hitReply(client, prefix, true, of), [hit]);
  if (decision instanceof Error) throw decision;
  return (decision as ScriptDecision).receipts ?? [];
}

async function refund(
  client: Redis,
  prefix: string,
  receipts: readonly Receipt[],
  of: readonly RateLimitRule[] = rules,
): Promise<boolean[]> {
  const taken = { identity: 'id', rules: of, receipts };
  const { keys, argv } = packRefund(prefix, taken);
  return parseRefundReply(await client.eval(REFUND_LUA, keys.length, ...keys, ...argv), taken);
}

const exists = (client: Redis, prefix: string): Promise<number[]> =>
  Promise.all(rules.map((rule) => client.exists(counterKey(prefix, 'id', rule))));

test('receipts come only when asked, and only for a hit that passed: an ordinary reply is as before', async () => {
  const client = await connectRedis();
  const prefix = uniquePrefix();
  // allowed, then remaining, resetMs, retryAfterMs per limit
  expect(await hitReply(client, prefix, false)).toHaveLength(1 + 3 * rules.length);
  // and two values per limit more
  expect(await hitReply(client, prefix, true)).toHaveLength(1 + 5 * rules.length);
  await hitReply(client, prefix, false);
  const blocked = await hitReply(client, prefix, true);
  expect(blocked[0]).toBe(0);
  expect(blocked).toHaveLength(1 + 3 * rules.length);
});

test('a refund right after the take leaves every counter as if the hit never came', async () => {
  const client = await connectRedis();
  const prefix = uniquePrefix();
  const receipts = await take(client, prefix);
  expect(await refund(client, prefix, receipts)).toEqual([true, true, true]);
  expect(await exists(client, prefix)).toEqual([0, 0, 0]);
});

test('TOKEN_BUCKET: refunds in the order of their takes, the earlier first, each return their tokens', async () => {
  const client = await connectRedis();
  const prefix = uniquePrefix();
  // one token each 12 s: a token kept would leave the bucket's time 12 s ahead
  const bucket = [rules[2] as RateLimitRule];
  const nowUs = async () => {
    const [seconds, micros] = await client.time();
    return Number(seconds) * 1e6 + Number(micros);
  };
  const startedAt = await nowUs();
  const first = await take(client, prefix, bucket);
  const second = await take(client, prefix, bucket);
  expect(await refund(client, prefix, first, bucket)).toEqual([true]);
  expect(await refund(client, prefix, second, bucket)).toEqual([true]);
  const endedAt = await nowUs();
  // back to a full bucket, but for at most the time the takes were held
  const value = await client.get(counterKey(prefix, 'id', bucket[0] as RateLimitRule));
  const tatUs = Number((value ?? '0').split(':')[0]);
  expect(tatUs).toBeLessThanOrEqual(endedAt + (endedAt - startedAt));
});

test('without PEXPIRETIME (Redis before 7.0): FIXED_WINDOW units stay until the window ends; the others are refunded', async () => {
  noExpireTime = await startRedisServer(undefined, {
    args: ['--rename-command', 'PEXPIRETIME', ''],
  });
  const client = await connectRedis({}, noExpireTime.url);
  const prefix = uniquePrefix();
  const receipts = await take(client, prefix);
  expect(receipts[0]).toEqual(['0', '0']);
  expect(await refund(client, prefix, receipts)).toEqual([false, true, true]);
  const fixed = counterKey(prefix, 'id', rules[0] as RateLimitRule);
  expect(await client.get(fixed)).toBe('2');
  expect(await client.pttl(fixed)).toBeGreaterThan(0);
  expect(await exists(client, prefix)).toEqual([1, 0, 0]);
});

describe("a budget's refund (refundAndPeek, lua/hit.lua) on a key it cannot count on", () => {
  // a value no take of this algorithm writes, and a key of another type
  const foreign: [string, (client: Redis, key: string) => Promise<unknown>][] = [
    ['a string no take writes', (client, key) => client.set(key, 'x:y:z')],
    ['a hash', (client, key) => client.hset(key, 'f', 'v')],
  ];
  const cases = RATE_ALGORITHMS.flatMap((algorithm) =>
    foreign.map(([what, write]) => [algorithm, what, write] as const),
  );

  test.each(cases)(
    '%s, replaced by %s: fails, and leaves the key as it was',
    async (algorithm, _what, write) => {
      const client = await connectRedis();
      const prefix = uniquePrefix();
      const store = createRedisStore({ client, prefix, blockCache: false });
      const rule: RateLimitRule = {
        action: 'budget',
        algorithm,
        windowSeconds: 60,
        limit: 100,
        cost: 1,
      };
      const taken = await store.take!('team', rule, 10);
      expect(taken.allowed).toBe(true);
      const counter = counterKey(prefix, 'team', rule);
      expect(await client.exists(counter)).toBe(1);
      await client.del(counter);
      await write(client, counter);
      const before = await client.dump(counter);
      await expect(store.refundAndPeek!('team', rule, taken.receipt!, 6)).rejects.toThrow(counter);
      expect(await client.dump(counter)).toEqual(before);
      await store.close?.();
    },
  );
});

test('a refund in lua/hit.lua names one limit: one naming two fails, and refunds nothing', async () => {
  const client = await connectRedis();
  const prefix = uniquePrefix();
  const two = rules.filter((r) => r.algorithm !== 'SLIDING_WINDOW');
  const receipts = await take(client, prefix, two);
  const keys = two.map((rule) => counterKey(prefix, 'id', rule));
  const before = await Promise.all(keys.map((key) => client.get(key)));
  const hit = {
    kind: 'refund' as const,
    identity: 'id',
    rules: two,
    refund: { units: [1, 1], taken: [2, 2], receipts },
  };
  const packed = packHits(prefix, [hit]);
  const reply = await client.eval(HIT_LUA, packed.keys.length, ...packed.keys, ...packed.argv);
  const [outcome] = parseHitReply(reply, [hit]);
  expect(outcome).toBeInstanceOf(Error);
  expect((outcome as Error).message).toMatch(/a refund names one limit, not 2/);
  expect(await Promise.all(keys.map((key) => client.get(key)))).toEqual(before);
});
