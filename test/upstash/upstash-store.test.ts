import type { Redis } from 'ioredis';

import { ALGORITHMS, type RateLimitAlgorithm, type RateLimitRule } from '../../src';
import { counterKey } from '../../src/stores/keys';
import type { DecisionEvent } from '../../src/decision-events';
import type { RateLimitStore } from '../../src/stores/store';
import { createUpstashStore, type UpstashStoreOptions } from 'graphql-atomic-rate-limit/upstash';
import { startUpstashBridge, type UpstashBridge } from '../../kit/upstash-bridge';
import { releaseTogether } from '../support/barrier';
import { sleep } from '../support/processes';
import {
  closeClients,
  connectRedis,
  keysUnder,
  redisUrl,
  startRedisServer,
  uniquePrefix,
} from '../support/redis';
import { EXACT_BURST, firstBurst } from '../support/first-burst';
import { codes, limitedSchema, run } from '../support/schema';

/*
 * The Upstash store over the REST protocol, against a bridge that speaks it in front of the
 * test Redis (kit/upstash-bridge.js): exact bursts, all-or-nothing combined limits, NOSCRIPT,
 * and what happens when an answer is lost (never resent, counted at most once).
 */

const TOKEN = 'test-token-0123456789';
const LIMIT = 10;

let bridge: UpstashBridge;
let admin: Redis;
const stores: RateLimitStore[] = [];
/** A test's own bridges, closed after it (again, when the test closed one itself). */
const bridges: UpstashBridge[] = [];

beforeAll(async () => {
  bridge = await startUpstashBridge({ redisUrl: redisUrl(), token: TOKEN });
  admin = await connectRedis();
});

afterEach(async () => {
  bridge.setMode({});
  for (const store of stores.splice(0)) await store.close?.();
  for (const own of bridges.splice(0)) await own.close();
});

afterAll(async () => {
  await bridge.close();
  await closeClients();
});

/** A store on the bridge, closed after the test. */
function upstash(
  options: Partial<UpstashStoreOptions> = {},
): ReturnType<typeof createUpstashStore> {
  const store = createUpstashStore({
    url: bridge.url,
    token: TOKEN,
    // not about deadlines: generous, so that a loaded machine fails nothing
    timeoutMs: 10_000,
    ...options,
  });
  stores.push(store);
  return store;
}

async function opened(options: Partial<UpstashStoreOptions> = {}): Promise<RateLimitStore> {
  const store = upstash(options);
  // as docs/upstash.md writes it: `ready` is always there (no TS2722 under strict)
  await store.ready();
  return store;
}

/** The script calls (EVALSHA, EVAL) the bridge received since `from`, by command name. */
function scriptCalls(from: number): string[] {
  return bridge.requests
    .slice(from)
    .flatMap((r) => r.commands.map((c) => String(c[0]).toUpperCase()))
    .filter((name) => name === 'EVALSHA' || name === 'EVAL');
}

const rule = (
  algorithm: RateLimitAlgorithm,
  extra: Partial<RateLimitRule> = {},
): RateLimitRule => ({
  action: 'submit',
  algorithm,
  windowSeconds: 60,
  limit: LIMIT,
  cost: 1,
  ...extra,
});

describe('100 hits released at one instant, limit 10', () => {
  const cases = ALGORITHMS.flatMap((algorithm) => [
    { algorithm, maxBatch: 128, stores: 10, calls: 10 },
    { algorithm, maxBatch: 1, stores: 10, calls: 100 },
  ]);
  test.each(cases)(
    '$algorithm, maxBatch $maxBatch: exactly 10 pass, in $calls HTTP calls',
    async ({ algorithm, maxBatch, stores: count, calls }) => {
      const prefix = uniquePrefix();
      const limited = rule(algorithm);
      const from = bridge.requests.length;
      const results = await releaseTogether(count, async () => {
        const store = await opened({ prefix, maxBatch });
        return () =>
          Promise.all(Array.from({ length: 100 / count }, () => store.hit('team-1', [limited])));
      });
      const allowed = results.flat().filter((d) => d.allowed);
      expect(allowed).toHaveLength(LIMIT);
      // one HTTP call per batch: each store's ten hits are one call, or ten with maxBatch 1
      expect(scriptCalls(from)).toHaveLength(calls);
      expect(await keysUnder(admin, prefix)).toHaveLength(1);
    },
  );

  test('a field with two identities: all or nothing, each limit exact', async () => {
    const prefix = uniquePrefix();
    const perUser = rule('FIXED_WINDOW', { action: 'user', limit: 3, by: 'user' });
    const perTeam = rule('FIXED_WINDOW', { action: 'team', limit: LIMIT, by: 'team' });
    const users = ['ann', 'bob', 'cid', 'dee', 'eve'];
    const results = await releaseTogether(10, async (i) => {
      const store = await opened({ prefix });
      return () =>
        Promise.all(
          Array.from({ length: 10 }, (_, j) => {
            const user = users[(i + j) % users.length] as string;
            return store.hit([user, 'team-1'], [perUser, perTeam]);
          }),
        );
    });
    expect(results.flat().filter((d) => d.allowed)).toHaveLength(LIMIT);
    const team = Number(await admin.get(counterKey(prefix, 'team-1', perTeam)));
    const byUser = await Promise.all(
      users.map(async (u) => Number((await admin.get(counterKey(prefix, u, perUser))) ?? 0)),
    );
    expect(team).toBe(LIMIT);
    // a hit blocked by either limit counted against neither
    expect(byUser.reduce((a, b) => a + b, 0)).toBe(LIMIT);
    for (const count of byUser) expect(count).toBeLessThanOrEqual(3);
  });
});

test('a fresh store on a fresh server, default store options, no ready(): 50 identities x 6 hits at once, each exact', async () => {
  const fresh = await startRedisServer();
  try {
    const own = await startUpstashBridge({ redisUrl: fresh.url, token: TOKEN });
    bridges.push(own);
    // its first hits come while it loads its scripts: they wait for that, then decide
    const store = createUpstashStore({ url: own.url, token: TOKEN, prefix: uniquePrefix() });
    stores.push(store);
    // the directive's deadline generous, as test/cluster/first-burst.test.ts says why
    expect(await firstBurst(store, { timeoutMs: 10_000 })).toEqual(Array(50).fill(EXACT_BURST));
  } finally {
    await fresh.stop();
  }
}, 60_000);

test('after SCRIPT FLUSH: NOSCRIPT, then EVAL once, nothing counted twice', async () => {
  const prefix = uniquePrefix();
  const store = await opened({ prefix, blockCache: false });
  const limited = rule('FIXED_WINDOW');
  for (let i = 0; i < 3; i++) expect((await store.hit('team-1', [limited])).allowed).toBe(true);
  await admin.script('FLUSH');
  const from = bridge.requests.length;
  expect((await store.hit('team-1', [limited])).allowed).toBe(true);
  expect(scriptCalls(from)).toEqual(['EVALSHA', 'EVAL']);
  expect(Number(await admin.get(counterKey(prefix, 'team-1', limited)))).toBe(4);
  // the next hit is EVALSHA again: EVAL loaded the script
  const next = bridge.requests.length;
  await store.hit('team-1', [limited]);
  expect(scriptCalls(next)).toEqual(['EVALSHA']);
});

describe('a lost answer is a store error, sent once, counted at most once', () => {
  const identity = 'secret-identity-42';
  const expectNoIdentity = (error: unknown, prefix: string): void => {
    const message = (error as Error).message;
    expect(message).not.toContain(identity);
    expect(message).not.toContain(prefix);
    expect(message).not.toContain(TOKEN);
  };

  test('a bad token: ready() and hits fail naming HTTP 401, nothing counted', async () => {
    const prefix = uniquePrefix();
    const store = upstash({ prefix, token: 'wrong-token' });
    await expect(store.ready?.()).rejects.toThrow(/HTTP 401/);
    const error = await store.hit(identity, [rule('FIXED_WINDOW')]).catch((e: unknown) => e);
    expect((error as Error).message).toMatch(/refused the token \(HTTP 401\)/);
    expect((error as Error).message).not.toContain('wrong-token');
    expectNoIdentity(error, prefix);
    expect(await keysUnder(admin, prefix)).toEqual([]);
  });

  test('a bad token through the directive: RATE_LIMIT_UNAVAILABLE, the resolver never runs', async () => {
    const prefix = uniquePrefix();
    let ran = 0;
    const schema = limitedSchema(
      'type Query { send: Boolean @rateLimit(action: "send", window: 60, limit: 5) }',
      { Query: { send: () => (ran += 1) > 0 } },
      {
        store: upstash({ prefix, token: 'wrong-token' }),
        identify: () => identity,
        timeoutMs: 10_000,
      },
    );
    const result = await run(schema, '{ send }');
    expect(codes(result)).toEqual(['RATE_LIMIT_UNAVAILABLE']);
    expect(JSON.stringify(result)).not.toContain(identity);
    expect(ran).toBe(0);
    expect(await keysUnder(admin, prefix)).toEqual([]);
  });

  test.each(['before', 'after'] as const)(
    'the connection dropped %s the script ran: one request, no retry',
    async (drop) => {
      const prefix = uniquePrefix();
      const store = await opened({ prefix });
      const limited = rule('FIXED_WINDOW');
      bridge.setMode({ drop });
      const from = bridge.requests.length;
      const error = await store.hit(identity, [limited]).catch((e: unknown) => e);
      expect((error as Error).message).toMatch(/outcome is unknown and it is not sent again/);
      expectNoIdentity(error, prefix);
      await sleep(300);
      expect(scriptCalls(from)).toEqual(['EVALSHA']);
      const counted = Number((await admin.get(counterKey(prefix, identity, limited))) ?? 0);
      expect(counted).toBe(drop === 'after' ? 1 : 0);
    },
  );

  test('the bridge closed: the hit fails, and a new bridge on another port sees nothing', async () => {
    const own = await startUpstashBridge({ redisUrl: redisUrl(), token: TOKEN });
    bridges.push(own);
    const prefix = uniquePrefix();
    const store = createUpstashStore({ url: own.url, token: TOKEN, prefix, timeoutMs: 10_000 });
    stores.push(store);
    await store.ready?.();
    const before = own.requests.length;
    await own.close();
    const error = await store.hit(identity, [rule('FIXED_WINDOW')]).catch((e: unknown) => e);
    expect((error as Error).message).toMatch(/call failed .*outcome is unknown/);
    expectNoIdentity(error, prefix);
    expect(own.requests.length).toBe(before);
    expect(await keysUnder(admin, prefix)).toEqual([]);
  });

  test('connections cut mid-burst: each hit sent once, none counted twice', async () => {
    const own = await startUpstashBridge({ redisUrl: redisUrl(), token: TOKEN });
    bridges.push(own);
    const prefix = uniquePrefix();
    const limited = rule('FIXED_WINDOW', { limit: 1_000 });
    const mine: RateLimitStore[] = [];
    for (let i = 0; i < 10; i++) {
      const store = createUpstashStore({ url: own.url, token: TOKEN, prefix, timeoutMs: 10_000 });
      stores.push(store);
      mine.push(store);
    }
    for (const store of mine) await store.ready?.();
    const from = own.requests.length;
    // every batch runs, then waits for its answer: its connection is cut while it waits, and
    // the bridge goes on listening (a call sent again would reach it)
    own.setMode({ delayMs: 5_000 });
    const outcomes = releaseTogether(mine.length, async (i) => {
      const store = mine[i] as RateLimitStore;
      return () =>
        Promise.allSettled(Array.from({ length: 10 }, () => store.hit(identity, [limited])));
    });
    const key = counterKey(prefix, identity, limited);
    while (Number((await admin.get(key)) ?? 0) < 100) await sleep(10);
    own.setMode({});
    own.cut();
    const settled = (await outcomes).flat();
    expect(settled.every((o) => o.status === 'rejected')).toBe(true);
    for (const o of settled) if (o.status === 'rejected') expectNoIdentity(o.reason, prefix);
    await sleep(300);
    // one call per store's batch, none sent again; each hit counted once, though none answered
    expect(own.requests.slice(from).filter((r) => r.commands[0]?.[0] === 'EVALSHA')).toHaveLength(
      10,
    );
    expect(Number(await admin.get(key))).toBe(100);
  });

  test('a slow bridge: timed out at timeoutMs, a store error, counted once, never resent', async () => {
    const prefix = uniquePrefix();
    const store = await opened({ prefix, timeoutMs: 150 });
    const limited = rule('FIXED_WINDOW');
    bridge.setMode({ delayMs: 1_000 });
    const from = bridge.requests.length;
    const error = await store.hit(identity, [limited]).catch((e: unknown) => e);
    expect((error as Error).message).toMatch(/did not answer EVALSHA within timeoutMs \(150 ms\)/);
    expectNoIdentity(error, prefix);
    await sleep(1_200);
    expect(scriptCalls(from)).toEqual(['EVALSHA']);
    expect(Number(await admin.get(counterKey(prefix, identity, limited)))).toBe(1);
  });

  test.each([307, 308, 301])(
    'a redirect (HTTP %i) after the script ran: not followed, a store error, counted once',
    async (status) => {
      const prefix = uniquePrefix();
      const store = await opened({ prefix });
      const limited = rule('FIXED_WINDOW');
      // the bridge redirects to itself: a fetch that follows sends the script again
      bridge.setMode({ redirect: status });
      const from = bridge.requests.length;
      const error = await store.hit(identity, [limited]).catch((e: unknown) => e);
      expect((error as Error).message).toMatch(
        new RegExp(`redirect \\(HTTP ${status}\\), which is not followed; its outcome is unknown`),
      );
      expectNoIdentity(error, prefix);
      await sleep(300);
      expect(scriptCalls(from)).toEqual(['EVALSHA']);
      expect(Number(await admin.get(counterKey(prefix, identity, limited)))).toBe(1);
    },
  );

  test('an error text that echoes the Authorization header: no token in the error, the event or ready()', async () => {
    const prefix = uniquePrefix();
    const store = await opened({ prefix });
    const limited = rule('FIXED_WINDOW');
    bridge.setMode({ echoAuthorization: true });
    const error = (await store.hit(identity, [limited]).catch((e: unknown) => e)) as Error;
    // the bridge did echo it: the message says so, with the token taken out
    expect(error.message).toContain('Authorization: Bearer [token]');
    expect(error.stack).not.toContain(TOKEN);
    expectNoIdentity(error, prefix);
    const rejected = (await upstash({ prefix })
      .ready?.()
      .catch((e: unknown) => e)) as Error;
    expect(rejected.message).toContain('Bearer [token]');
    expect(`${rejected.message} ${rejected.stack}`).not.toContain(TOKEN);
    // through the directive: the response and what onDecision is given
    const events: DecisionEvent[] = [];
    const schema = limitedSchema(
      'type Query { send: Boolean @rateLimit(action: "send", window: 60, limit: 5) }',
      { Query: { send: () => true } },
      { store, identify: () => identity, timeoutMs: 10_000, onDecision: (e) => events.push(e) },
    );
    const result = await run(schema, '{ send }');
    expect(codes(result)).toEqual(['RATE_LIMIT_UNAVAILABLE']);
    expect(JSON.stringify(result)).not.toContain(TOKEN);
    expect(events).toHaveLength(1);
    expect(events[0]?.error?.message).toContain('Bearer [token]');
    expect(`${events[0]?.error?.message} ${events[0]?.error?.stack}`).not.toContain(TOKEN);
  });

  test('an error naming a key is scrubbed of it', async () => {
    const prefix = uniquePrefix();
    const store = await opened({ prefix, blockCache: false });
    const limited = rule('FIXED_WINDOW');
    // the script names the key it could not count on: a key of another type at the counter
    await admin.hset(counterKey(prefix, identity, limited), 'x', '1');
    const error = await store.hit(identity, [limited]).catch((e: unknown) => e);
    expect((error as Error).message).toMatch(
      /^Redis could not count this hit: WRONGTYPE .*\[key\]$/,
    );
    expectNoIdentity(error, prefix);
    expect((error as Error).stack).not.toContain(identity);
  });
});

test('a budget over REST: take, then refund part of it', async () => {
  const prefix = uniquePrefix();
  const store = await opened({ prefix, blockCache: false });
  const budget = rule('FIXED_WINDOW', { action: 'budget', limit: 100 });
  const taken = await store.take!('team-1', budget, 40);
  expect(taken.allowed).toBe(true);
  const receipt = taken.receipt;
  if (receipt === undefined) throw new Error('a take that passed has a receipt');
  expect(await store.refund!('team-1', budget, receipt, 15)).toBe(true);
  const [state] = await store.peek!('team-1', [budget]);
  expect(state?.remaining).toBe(75);
  // refunded once
  await expect(store.refund!('team-1', budget, receipt, 15)).rejects.toThrow(/refunded once/);
});

describe('options', () => {
  const url = 'https://example.upstash.io';
  test.each([
    [
      'url',
      { url: 'example.upstash.io', token: TOKEN },
      /createUpstashStore: url must be .*"example/,
    ],
    [
      'token',
      { url, token: '' },
      /createUpstashStore: token must be a non-empty string, got an empty/,
    ],
    [
      'timeoutMs',
      { url, token: TOKEN, timeoutMs: 0 },
      /createUpstashStore: timeoutMs must be a positive/,
    ],
    [
      'maxBatch',
      { url, token: TOKEN, maxBatch: 1.5 },
      /createUpstashStore: maxBatch must be a whole/,
    ],
    [
      'blockCache',
      { url, token: TOKEN, blockCache: 'yes' },
      /createUpstashStore: blockCache must be a boolean/,
    ],
    [
      'fetch',
      { url, token: TOKEN, fetch: 'fetch' },
      /createUpstashStore: fetch must be a function/,
    ],
    ['prefix', { url, token: TOKEN, prefix: 'a{b}' }, /prefix "a\{b\}" must not contain/],
  ])('a bad %s is refused, naming it', (_name, options, message) => {
    expect(() => createUpstashStore(options as unknown as UpstashStoreOptions)).toThrow(message);
  });

  test.each([
    ['a user and password', 'https://ann:hunter2-secret@example.upstash.io'],
    ['a password alone', 'https://:hunter2-secret@example.upstash.io/'],
    ['a password, not a URL', 'https://ann:hunter2-secret@exa mple'],
    ['a password, another scheme', 'ftp://ann:hunter2-secret@example.upstash.io'],
    ['a password with / and @', 'https://ann:hunter2-secret/x@y@example.upstash.io'],
  ])('a url with %s is refused, its password never shown', (_case, url) => {
    const error = (() => {
      try {
        createUpstashStore({ url, token: TOKEN });
      } catch (e) {
        return e as Error;
      }
      return undefined;
    })();
    expect(error?.message).toMatch(/createUpstashStore: url must/);
    expect(error?.message).toContain('[user info]@');
    expect(`${error?.message} ${error?.stack}`).not.toContain('hunter2');
  });

  test('the token is never part of an option error', () => {
    const error = (() => {
      try {
        createUpstashStore({ url: 'nope', token: TOKEN });
      } catch (e) {
        return e as Error;
      }
      return undefined;
    })();
    expect(error?.message).toMatch(/url must be/);
    expect(error?.message).not.toContain(TOKEN);
  });
});
