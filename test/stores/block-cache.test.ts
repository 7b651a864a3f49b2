import {
  createRedisStore,
  RateLimitConfigError,
  type DecisionEvent,
  type RateLimitRule,
} from '../../src';
import { sleep } from '../support/processes';
import { connectRedis, ownRedis, scriptCalls, uniquePrefix } from '../support/redis';
import { codes, limitedSchema, run } from '../support/schema';

/*
 * blockCache: once Redis blocks a limit, this process answers further hits on it without a
 * script call until the wait Redis gave is over. A private Redis, so that script calls count.
 */

const redis = ownRedis();

const rule = (over: Partial<RateLimitRule> = {}): RateLimitRule => ({
  action: 'flood',
  algorithm: 'FIXED_WINDOW',
  windowSeconds: 1,
  limit: 3,
  cost: 1,
  ...over,
});

async function setup(blockCache?: boolean) {
  const client = await connectRedis({}, redis.url());
  const store = createRedisStore({ client, prefix: uniquePrefix(), blockCache });
  return { client, store };
}

test('a flood of 2,000 blocked hits makes only a handful of script calls, and passes again after the block', async () => {
  const { client, store } = await setup();
  const r = rule();
  for (let i = 0; i < 3; i++) expect((await store.hit('mallory', [r])).allowed).toBe(true);
  const before = await scriptCalls(client);
  let blocked = 0;
  for (let i = 0; i < 20; i++) {
    const decisions = await Promise.all(
      Array.from({ length: 100 }, () => store.hit('mallory', [r])),
    );
    blocked += decisions.filter((d) => !d.allowed).length;
  }
  expect(blocked).toBe(2_000);
  expect((await scriptCalls(client)) - before).toBeLessThanOrEqual(3);
  // the window ends within a second: hits pass again
  const deadline = Date.now() + 2_500;
  let passed = false;
  while (!passed && Date.now() < deadline) {
    passed = (await store.hit('mallory', [r])).allowed;
    if (!passed) await sleep(50);
  }
  expect(passed).toBe(true);
});

test('when a cached block runs out, one hit finds out and the flood waits for its answer', async () => {
  const { client, store } = await setup();
  const admin = await connectRedis({}, redis.url());
  const r = rule(); // 3 per 1 s window
  for (let i = 0; i < 3; i++) await store.hit('mallory', [r]);
  const blocked = await store.hit('mallory', [r]);
  expect(blocked.allowed).toBe(false);
  await sleep((blocked.limits[0]?.retryAfterMs ?? 0) + 100); // the block and its window are over
  const before = await scriptCalls(admin);
  // Redis holds every script for 300 ms: the first hit's call is still out while 30 more
  // hits arrive, one per turn of the event loop, as requests would
  await admin.client('PAUSE', 300, 'WRITE');
  const hits = [store.hit('mallory', [r])];
  for (let i = 0; i < 30; i++) {
    await new Promise((resolve) => setImmediate(resolve));
    hits.push(store.hit('mallory', [r]));
  }
  const decisions = await Promise.all(hits);
  expect(decisions.filter((d) => d.allowed)).toHaveLength(3);
  // one call found out that the window had ended; the 30 that waited for it went as one pass
  // (two calls of 15: see src/stores/redis/hit-batches.ts)
  expect((await scriptCalls(admin)) - before).toBeLessThanOrEqual(3);
  expect(client.status).toBe('ready');
});

test('without blockCache every blocked hit is a script call', async () => {
  const { client, store } = await setup(false);
  const r = rule({ windowSeconds: 60 });
  for (let i = 0; i < 3; i++) await store.hit('m', [r]);
  const before = await scriptCalls(client);
  for (let i = 0; i < 5; i++) expect((await store.hit('m', [r])).allowed).toBe(false);
  expect((await scriptCalls(client)) - before).toBe(5);
});

test('another identity, or another action, is never blocked by the cache', async () => {
  const { store } = await setup();
  const r = rule({ windowSeconds: 60 });
  for (let i = 0; i < 4; i++) await store.hit('mallory', [r]);
  expect((await store.hit('mallory', [r])).cached).toBe(true);
  expect((await store.hit('alice', [r])).allowed).toBe(true);
  expect((await store.hit('mallory', [rule({ action: 'other', windowSeconds: 60 })])).allowed).toBe(
    true,
  );
});

test('a cached block on any limit of a hit blocks the hit; the other limits are not counted', async () => {
  const { client, store } = await setup();
  const tight = rule({ action: 'tight', windowSeconds: 60, limit: 1 });
  const wide = rule({ action: 'wide', windowSeconds: 60, limit: 100 });
  await store.hit('m', [tight]);
  expect((await store.hit('m', [tight])).allowed).toBe(false); // Redis blocks: cached
  const before = await scriptCalls(client);
  const decision = await store.hit('m', [wide, tight]);
  expect(decision).toMatchObject({ allowed: false, cached: true });
  expect(decision.limits[1]?.retryAfterMs).toBeGreaterThan(0);
  expect(await scriptCalls(client)).toBe(before);
  expect((await store.peek?.('m', [wide]))?.[0]?.remaining).toBe(100);
});

test('a hit of another cost in a bucket asks Redis: only Redis knows its wait', async () => {
  const { store } = await setup();
  const bucket = rule({ algorithm: 'TOKEN_BUCKET', windowSeconds: 10, limit: 5 });
  await store.hit('m', [bucket], [5]);
  const one = await store.hit('m', [bucket], [1]);
  expect(one).toMatchObject({ allowed: false });
  expect(one.cached).toBeFalsy();
  const three = await store.hit('m', [bucket], [3]);
  expect(three.cached).toBeFalsy(); // not answered with the cost-1 wait of ~2 s
  expect(three.limits[0]?.retryAfterMs).toBeGreaterThan(5_000);
  // the cached block is now of cost 3: a cost-1 hit, which may pass sooner, asks Redis again
  const again = await store.hit('m', [bucket], [1]);
  expect(again.cached).toBeFalsy();
  expect(again.limits[0]?.retryAfterMs).toBeLessThan(2_100);
});

test('a reset through the store clears the cache at once', async () => {
  const { store } = await setup();
  const r = rule({ windowSeconds: 60 });
  for (let i = 0; i < 4; i++) await store.hit('m', [r]);
  expect((await store.hit('m', [r])).cached).toBe(true);
  await store.reset?.('m', [r]);
  expect((await store.hit('m', [r])).allowed).toBe(true);
});

test('events say the cache decided; the error carries the wait that is left', async () => {
  const events: DecisionEvent[] = [];
  const schema = limitedSchema(
    'type Query { ping: Int } type Mutation { go: Boolean @rateLimit(action: "go", window: 60, limit: 1) }',
    { Mutation: { go: () => true } },
    { store: (await setup()).store, onDecision: (e) => events.push(e) },
  );
  const team = { team: { id: 't' } };
  for (let i = 0; i < 3; i++) await run(schema, 'mutation { go }', team);
  const last = await run(schema, 'mutation { go }', team);
  expect(codes(last)).toEqual(['RATE_LIMITED']);
  expect(last.errors?.[0]?.extensions?.retryAfter).toBeGreaterThanOrEqual(59);
  expect(events.map((e) => e.decidedBy)).toEqual(['store', 'store', 'cache', 'cache']);
});

test("with a block cached, a bad identity is the store's RateLimitConfigError, not a TypeError", async () => {
  const { store } = await setup();
  const r = rule({ windowSeconds: 60 });
  for (let i = 0; i < 4; i++) await store.hit('blocked', [r]);
  expect((await store.hit('blocked', [r])).cached).toBe(true);
  const refused = store.hit(1 as never, [r]);
  await expect(refused).rejects.toBeInstanceOf(RateLimitConfigError);
  await expect(refused).rejects.toThrow(/hit: identity must be a string/);
  await expect(store.hit('blocked', [r], [0])).rejects.toThrow(/hit: costs\[0\] must be a whole/);
  await expect(store.reset?.(1 as never, [r])).rejects.toBeInstanceOf(RateLimitConfigError);
});

test('blockCache must be a boolean', async () => {
  const client = await connectRedis({}, redis.url());
  expect(() => createRedisStore({ client, blockCache: 'yes' as never })).toThrow(/blockCache/);
});

describe.each(['FIXED_WINDOW', 'SLIDING_WINDOW', 'TOKEN_BUCKET'] as const)(
  'two fields share an action with different limits (%s)',
  (algorithm) => {
    test('a block of the smaller limit never answers a hit of the larger one', async () => {
      const { client, store } = await setup();
      const search = rule({ action: 'api', algorithm, windowSeconds: 60, limit: 3 });
      const list = rule({ action: 'api', algorithm, windowSeconds: 60, limit: 100 });
      for (let i = 0; i < 4; i++) await store.hit('m', [search]);
      expect((await store.hit('m', [search])).cached).toBe(true);
      const before = await scriptCalls(client);
      const decision = await store.hit('m', [list]);
      // Redis decides it: the windows hold 3 of 100 and pass it; a bucket's time is shared
      expect(decision.cached).toBeFalsy();
      expect(await scriptCalls(client)).toBe(before + 1);
      if (algorithm !== 'TOKEN_BUCKET') {
        expect(decision).toMatchObject({ allowed: true, limits: [{ remaining: 96 }] });
      }
    });
  },
);

test.each(['FIXED_WINDOW', 'TOKEN_BUCKET'] as const)(
  'a cached block reports the newest state this process has for its counter (%s)',
  async (algorithm) => {
    const { store } = await setup();
    const r = rule({ algorithm, windowSeconds: 60, limit: 5 });
    expect((await store.hit('m', [r], [3])).allowed).toBe(true); // 2 left
    const blocked = await store.hit('m', [r], [3]);
    expect(blocked).toMatchObject({ allowed: false, limits: [{ remaining: 2 }] });
    // a cheaper hit is not covered by the block: Redis passes it, 1 left
    expect(await store.hit('m', [r], [1])).toMatchObject({
      allowed: true,
      limits: [{ remaining: 1 }],
    });
    const cached = await store.hit('m', [r], [3]);
    expect(cached).toMatchObject({ allowed: false, cached: true, limits: [{ remaining: 1 }] });
  },
);

test('a cached block of a log reports the reset of the newest unit another limit took', async () => {
  const { store } = await setup();
  const search = rule({ action: 'api', algorithm: 'SLIDING_WINDOW', windowSeconds: 3, limit: 1 });
  const list = rule({ action: 'api', algorithm: 'SLIDING_WINDOW', windowSeconds: 3, limit: 100 });
  await store.hit('m', [search]);
  const blocked = await store.hit('m', [search]);
  expect(blocked.allowed).toBe(false);
  await sleep(1_000);
  const listed = await store.hit('m', [list]); // a newer unit: the log is whole later
  expect(listed.allowed).toBe(true);
  const cached = await store.hit('m', [search]);
  expect(cached.cached).toBe(true);
  expect(cached.limits[0]?.resetMs).toBeGreaterThan((blocked.limits[0]?.resetMs ?? 0) - 500);
  expect(cached.limits[0]?.resetMs).toBeLessThanOrEqual(listed.limits[0]?.resetMs ?? 0);
});
