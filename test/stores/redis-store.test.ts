import { createHash, randomUUID } from 'node:crypto';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';

import { ALGORITHMS, createRedisStore, RateLimitConfigError, type RateLimitRule } from '../../src';
import { counterKey } from '../../src/stores/keys';
import { packHits } from '../../src/stores/redis/hit-script';
import { Redis } from 'ioredis';

import type { Decision, RateLimitStore } from '../../src';

import {
  closeClients,
  connectRedis,
  scriptCalls,
  startRedisServer,
  uniquePrefix,
  waitFor,
  type RedisProcess,
} from '../support/redis';
import { openedRedisStore } from '../support/stores';

const stores: RateLimitStore[] = [];
/** `store`, closed after the tests. */
const closing = (store: RateLimitStore): RateLimitStore => {
  stores.push(store);
  return store;
};
afterAll(async () => {
  await Promise.all(stores.map(async (store) => store.close?.()));
  await closeClients();
});

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

test('the store refuses a client that is not ioredis, a prefix with a brace, a bad maxBatch or connectWaitMs', async () => {
  const misuse = (options: Parameters<typeof createRedisStore>[0], what: RegExp): void => {
    expect(() => createRedisStore(options)).toThrow(RateLimitConfigError);
    expect(() => createRedisStore(options)).toThrow(what);
  };
  misuse({ client: {} as never }, /ioredis/);
  const client = await connectRedis();
  misuse({ client, prefix: 'a{b' }, /prefix/);
  misuse({ client, maxBatch: 0 }, /maxBatch/);
  misuse({ client, connectWaitMs: 0 }, /connectWaitMs/);
  misuse({ client, connectWaitMs: NaN }, /connectWaitMs/);
});

test('two copies of the library with different scripts on one client each run their own script', async () => {
  // a second copy whose hit script answers something else: neither copy may run the other's
  const copy = mkdtempSync(join(__dirname, '..', '..', 'node_modules', '.second-copy-'));
  try {
    cpSync(join(__dirname, '..', '..', 'dist'), join(copy, 'dist'), { recursive: true });
    // the build carries the Lua (dist/stores/redis/lua-text.js): the copy's hit script is changed there
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- the copy's own module
    const { LUA_TEXT } = require(join(copy, 'dist', 'stores', 'redis', 'lua-text')) as {
      LUA_TEXT: Record<string, { source: string; sha: string }>;
    };
    const hit = LUA_TEXT.hit as { source: string; sha: string };
    hit.source = `do return redis.error_reply('the other copy') end\n${hit.source}`;
    hit.sha = createHash('sha1').update(hit.source).digest('hex');
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- a second copy, loaded at run time
    const other = require(join(copy, 'dist')) as typeof import('../../src');
    const client = await connectRedis();
    const prefix = uniquePrefix();
    const ours = closing(createRedisStore({ client, prefix }));
    const theirs = closing(other.createRedisStore({ client, prefix }));
    await expect(theirs.hit('id', [rule])).rejects.toThrow(/the other copy/);
    await expect(ours.hit('id', [rule])).resolves.toMatchObject({ allowed: true });
    // the commands are defined on each store's own connection, none on the client
    expect(Object.keys(client).filter((name) => name.startsWith('graphqlAtomic'))).toEqual([]);
  } finally {
    rmSync(copy, { recursive: true, force: true });
  }
});

describe('the store owns its connection', () => {
  let redis: RedisProcess;
  beforeAll(async () => {
    redis = await startRedisServer(undefined, { args: ['--requirepass', 'sesame'] });
  });
  afterAll(() => redis.stop());

  const METHODS = ['sendCommand', 'evalsha', 'eval', 'defineCommand', 'del'] as const;
  /** The client's methods by name, to compare by identity. */
  const methodsOf = (target: object): unknown[] => METHODS.map((name) => Reflect.get(target, name));

  /** A client's options: a db and a password, and a name of its own to count connections by. */
  const options = () => ({ password: 'sesame', db: 3, connectionName: `owner-${randomUUID()}` });
  /** Connections named `name` that the server has open now. */
  const named = async (admin: Redis, name: string): Promise<number> =>
    String(await admin.client('LIST'))
      .split('\n')
      .filter((line) => line.includes(` name=${name} `)).length;

  test('a frozen client, never connected, passes and the store decides on its own connection', async () => {
    const client = new Redis(redis.url, { ...options(), lazyConnect: true });
    Object.freeze(client.options);
    Object.freeze(client);
    const store = closing(createRedisStore({ client, prefix: uniquePrefix() }));
    // the store opens its connection on its first call, as the client would have: a busy machine
    // may take longer than connectWaitMs for that, failing the call, unsent
    await waitFor('the store to connect', async () =>
      Array.isArray(await store.peek?.('frozen', [rule])),
    );
    const decisions = await Promise.all([1, 2, 3].map(() => store.hit('frozen', [rule])));
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, false]);
    expect(client.status).toBe('wait');
  });

  test('the client keeps its options, methods, commands and listeners; db and password carry over', async () => {
    const client = await connectRedis(options(), redis.url);
    const before = {
      options: { ...client.options },
      own: Object.getOwnPropertyNames(client).sort(),
      events: client.eventNames().map((name) => [name, client.listenerCount(name)]),
      methods: methodsOf(client),
    };
    const prefix = uniquePrefix();
    const store = closing(createRedisStore({ client, prefix }));
    await store.hit('kept', [rule]);
    await store.reset?.('kept', [rule]);
    await store.hit('kept', [rule]);
    expect({ ...client.options }).toEqual(before.options);
    for (const [key, value] of Object.entries(before.options)) {
      expect(client.options[key as keyof typeof client.options]).toBe(value);
    }
    expect(Object.getOwnPropertyNames(client).sort()).toEqual(before.own);
    expect(client.eventNames().map((name) => [name, client.listenerCount(name)])).toEqual(
      before.events,
    );
    // the same functions, from the prototype: none was replaced on the client
    expect(methodsOf(client)).toEqual(before.methods);
    for (const name of METHODS) expect(Object.hasOwn(client, name)).toBe(false);
    // the store's connection is in the client's db, with its password and name
    expect(await client.get(counterKey(prefix, 'kept', rule))).toBe('1');
    expect(await named(client, client.options.connectionName as string)).toBe(2);
  });

  test("close() closes the store's connection, never the client, which stays usable", async () => {
    const client = await connectRedis(options(), redis.url);
    const store = createRedisStore({ client, prefix: uniquePrefix() });
    await store.hit('closing', [rule]);
    expect(await named(client, client.options.connectionName as string)).toBe(2);
    await store.close?.();
    await waitFor(
      "the store's connection to close",
      async () => (await named(client, client.options.connectionName as string)) === 1,
    );
    expect(client.status).toBe('ready');
    expect(await client.ping()).toBe('PONG');
    await expect(store.hit('closing', [rule])).rejects.toThrow(/closed/);
  });

  test('stores made from one client share one connection of theirs, closed with the last of them', async () => {
    const client = await connectRedis(options(), redis.url);
    const name = client.options.connectionName as string;
    const [first, second] = [1, 2].map(() =>
      createRedisStore({ client, prefix: uniquePrefix() }),
    ) as [RateLimitStore, RateLimitStore];
    await Promise.all([first.hit('shared', [rule]), second.hit('shared', [rule])]);
    expect(await named(client, name)).toBe(2);
    await first.close?.();
    await expect(first.hit('shared', [rule])).rejects.toThrow(/closed/);
    await expect(second.hit('shared', [rule])).resolves.toMatchObject({ allowed: true });
    await second.close?.();
    await waitFor("the stores' connection to close", async () => (await named(client, name)) === 1);
  });

  test("closing the client closes the store's connection too", async () => {
    const client = await connectRedis(options(), redis.url);
    const admin = await connectRedis({ password: 'sesame' }, redis.url);
    const store = createRedisStore({ client, prefix: uniquePrefix() });
    await store.hit('following', [rule]);
    expect(await named(admin, client.options.connectionName as string)).toBe(2);
    await client.quit();
    await waitFor(
      "the store's connection to close",
      async () => (await named(admin, client.options.connectionName as string)) === 0,
    );
    await expect(store.hit('following', [rule])).rejects.toThrow(/closed/);
  });
});

describe('coalescing', () => {
  let redis: RedisProcess;
  beforeAll(async () => {
    redis = await startRedisServer();
  });
  afterAll(() => redis.stop());

  test('hits made in one turn of the event loop share one script call, each decided on its own', async () => {
    const client = await connectRedis({}, redis.url);
    const store = createRedisStore({ client, prefix: uniquePrefix() });
    await store.ready();
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

  test('one call names each rule at each cost once, and every hit counts its own cost', async () => {
    const client = await connectRedis({}, redis.url);
    const store = createRedisStore({ client, prefix: uniquePrefix() });
    const fixed: RateLimitRule = { ...rule, action: 'mix', limit: 10 };
    const bucket: RateLimitRule = { ...fixed, algorithm: 'TOKEN_BUCKET', windowSeconds: 3600 };
    const hits = [
      { kind: 'hit' as const, identity: 'a', rules: [fixed, bucket], costs: [2, 2] },
      { kind: 'hit' as const, identity: 'a', rules: [fixed, bucket] },
      { kind: 'hit' as const, identity: 'a', rules: [fixed, bucket], costs: [3, 1] },
      // equal rules in other objects: counted on the same keys
      { kind: 'hit' as const, identity: 'a', rules: [{ ...fixed }, { ...bucket }] },
    ];
    // fixed at 2, bucket at 2, fixed at 1, bucket at 1, fixed at 3, and the two copies at 1
    expect(packHits('p:', hits).argv[0]).toBe(7);
    await store.ready();
    await store.hit('warm-up', [rule]);
    const before = await scriptCalls(client);
    const decisions = await Promise.all(hits.map((h) => store.hit(h.identity, h.rules, h.costs)));
    expect(await scriptCalls(client)).toBe(before + 1);
    expect(decisions.map((d) => d.limits.map((l) => l.remaining))).toEqual([
      [8, 8],
      [7, 7],
      [4, 6],
      [3, 5],
    ]);
  });

  test('a hit or a take sends a lease token only when it has a CONCURRENCY limit', () => {
    const slots: RateLimitRule = { ...rule, action: 'slots', algorithm: 'CONCURRENCY' };
    const tail = (hit: Parameters<typeof packHits>[1][number]) =>
      packHits('p:', [hit]).argv.slice(5);
    expect(tail({ kind: 'hit', identity: 'a', rules: [rule] })).toEqual(['hit', 1, 1]);
    expect(tail({ kind: 'take', identity: 'a', rules: [rule] })).toEqual(['take', 1, 1]);
    expect(tail({ kind: 'hit', identity: 'a', rules: [slots], lease: 'tok' })).toEqual([
      'hit',
      1,
      1,
      'tok',
    ]);
    // a CONCURRENCY hit without a token still says so, which the script refuses unwritten
    expect(tail({ kind: 'hit', identity: 'a', rules: [slots] })).toEqual(['hit', 1, 1, '']);
  });

  test('a turn of 16 hits or more goes as two calls while fewer than two are out, else as one', async () => {
    const client = await connectRedis({}, redis.url);
    const admin = await connectRedis({}, redis.url);
    const store = createRedisStore({ client, prefix: uniquePrefix() });
    await store.ready();
    await store.hit('warm-up', [rule]);
    const turn = (from: number, length = 40) =>
      Array.from({ length }, (_, i) => store.hit(`id-${from + i}`, [rule]));
    // Redis holds scripts that write for 200 ms: the first turn's two calls are still out when
    // the second turn is sent
    let before = await scriptCalls(admin);
    await admin.client('PAUSE', 200, 'WRITE');
    const first = turn(0);
    await new Promise((resolve) => setImmediate(resolve));
    const second = turn(100);
    const decisions = await Promise.all([...first, ...second]);
    expect(decisions.every((d) => d.allowed)).toBe(true);
    expect((await scriptCalls(admin)) - before).toBe(3);
    // nothing out: 15 hits are one call, 16 are two
    before = await scriptCalls(admin);
    await Promise.all(turn(200, 15));
    expect((await scriptCalls(admin)) - before).toBe(1);
    before = await scriptCalls(admin);
    await Promise.all(turn(300, 16));
    expect((await scriptCalls(admin)) - before).toBe(2);
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

  test.each([
    // 3 per second: one token every 333,333.33 us
    [3, 1, 1, [true, true, true, false], 334],
    // the largest limit: its square is just below 2^53; one token every 1.00099 us
    [94_906_265, 95, 94_906_265, [true, false], 1],
  ])(
    'TOKEN_BUCKET %i per %i s, hits of cost %i in one call: exact to the microsecond',
    async (limit, windowSeconds, cost, expected, retryAfterMs) => {
      const client = await connectRedis({}, redis.url);
      const store = createRedisStore({ client, prefix: uniquePrefix() });
      const r: RateLimitRule = {
        action: 't',
        algorithm: 'TOKEN_BUCKET',
        windowSeconds,
        limit,
        cost,
      };
      // one call, so every hit is decided at one server time
      const decisions = await Promise.all(
        expected.map((_, i) => store.hit('id', [i === 0 ? r : { ...r, cost: 1 }])),
      );
      expect(decisions.map((d) => d.allowed)).toEqual(expected);
      const last = decisions.at(-1)?.limits[0];
      expect(last).toMatchObject({ remaining: 0, retryAfterMs, resetMs: windowSeconds * 1000 });
    },
  );

  describe.each(ALGORITHMS)('%s: a counter key holding something else', (algorithm) => {
    const r: RateLimitRule = { action: 'a', algorithm, windowSeconds: 60, limit: 3, cost: 1 };
    type Spoil = [string, (c: Redis, key: string) => Promise<unknown>];
    const spoil: Spoil[] = [
      ['a list', (c, key) => c.rpush(key, 'x')],
      ['a hash', (c, key) => c.hset(key, 'f', 'v')],
    ];
    // a sorted set's log can hold no value the script misreads: ZCOUNT reads scores only
    if (algorithm !== 'SLIDING_WINDOW') {
      spoil.push(['a string that is no count', (c, key) => c.set(key, 'abc')]);
      spoil.push(['a fraction', (c, key) => c.set(key, '1.5')]);
    }

    test.each(spoil)(
      '%s fails its own hit only: the hits around it in the batch are decided and counted exactly',
      async (_, write) => {
        const client = await connectRedis({}, redis.url);
        const prefix = uniquePrefix();
        const store = createRedisStore({ client, prefix });
        await write(client, counterKey(prefix, 'bad', r));
        const other = { ...r, action: 'b' };
        await store.ready();
        await store.hit('warm-up', [r]);
        const before = await scriptCalls(client);
        const ids = ['good', 'bad', 'good', 'both', 'good', 'bad', 'good'];
        const outcomes = await Promise.allSettled(
          // `both` has a good limit, then the spoilt key: it fails, and its good limit is not taken
          ids.map((id) => (id === 'both' ? store.hit('bad', [other, r]) : store.hit(id, [r]))),
        );
        expect(await scriptCalls(client)).toBe(before + 1);
        const summary = outcomes.map((o) =>
          o.status === 'fulfilled'
            ? `${o.value.allowed ? 'pass' : 'block'} ${o.value.limits[0]?.remaining}`
            : (o.reason as Error).message,
        );
        expect(summary).toEqual([
          'pass 2',
          expect.stringMatching(/WRONGTYPE|not a|integer/),
          'pass 1',
          expect.stringMatching(/WRONGTYPE|not a|integer/),
          'pass 0',
          expect.stringMatching(/WRONGTYPE|not a|integer/),
          'block 0',
        ]);
        // the good hits were counted, and only them
        expect(await store.hit('good', [r])).toMatchObject({ allowed: false });
        expect(await store.hit('bad', [other])).toMatchObject({ limits: [{ remaining: 2 }] });
      },
    );
  });

  describe.each(ALGORITHMS)('%s: a counter that lost its TTL', (algorithm) => {
    test('gets one back at the next hit, even a blocked one', async () => {
      const client = await connectRedis({}, redis.url);
      const prefix = uniquePrefix();
      const store = createRedisStore({ client, prefix });
      const r: RateLimitRule = { action: 'a', algorithm, windowSeconds: 1, limit: 2, cost: 1 };
      const key = counterKey(prefix, 'id', r);
      await store.hit('id', [r]);
      await store.hit('id', [r]);
      expect(await client.persist(key)).toBe(1);
      expect((await store.hit('id', [r])).allowed).toBe(false);
      const ttl = await client.pttl(key);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(1_000);
      // and the identity is not locked out: the limit comes back
      await waitFor(
        'the limit to come back',
        async () => (await store.hit('id', [r])).allowed,
        3_000,
      );
    });
  });

  test('FIXED_WINDOW: a counter whose TTL outlasts its window is cut back to the window', async () => {
    const client = await connectRedis({}, redis.url);
    const prefix = uniquePrefix();
    const store = createRedisStore({ client, prefix });
    const r: RateLimitRule = { ...rule, windowSeconds: 1 };
    const key = counterKey(prefix, 'id', r);
    await client.set(key, String(r.limit), 'PX', 86_400_000);
    const blocked = await store.hit('id', [r]);
    expect(blocked.allowed).toBe(false);
    expect(blocked.limits[0]?.retryAfterMs).toBeLessThanOrEqual(1_000);
    expect(await client.pttl(key)).toBeLessThanOrEqual(1_000);
  });
});

describe('FIXED_WINDOW, a hit of one limit increments first', () => {
  const r: RateLimitRule = { ...rule, action: 'i', limit: 3 };
  const made = async (): Promise<{ client: Redis; store: RateLimitStore; key: string }> => {
    const client = await connectRedis();
    const prefix = uniquePrefix();
    // opened: a hit sent before the connection is up may wait past connectWaitMs on a busy machine
    const store = closing(await openedRedisStore({ client, prefix, blockCache: false }));
    return { client, store, key: counterKey(prefix, 'id', r) };
  };
  const endOf = (client: Redis, key: string): Promise<unknown> => client.call('PEXPIRETIME', key);

  test('the hit that opens the window gives the key the window as its TTL; later hits keep its end', async () => {
    const { client, store, key } = await made();
    expect(await store.hit('id', [r])).toMatchObject({
      allowed: true,
      limits: [{ remaining: 2, resetMs: 60_000, retryAfterMs: 0 }],
    });
    const ttl = await client.pttl(key);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(60_000);
    const end = await endOf(client, key);
    const second = await store.hit('id', [r]);
    expect(second).toMatchObject({ allowed: true, limits: [{ remaining: 1, retryAfterMs: 0 }] });
    expect(second.limits[0]?.resetMs).toBeGreaterThan(0);
    expect(second.limits[0]?.resetMs).toBeLessThanOrEqual(60_000);
    expect(await endOf(client, key)).toBe(end);
    expect(await client.get(key)).toBe('2');
  });

  test('a blocked hit leaves the counter and its TTL as it found them', async () => {
    const { client, store, key } = await made();
    expect((await store.hit('id', [r], [2])).allowed).toBe(true);
    const end = await endOf(client, key);
    const blocked = await store.hit('id', [r], [2]);
    expect(blocked).toMatchObject({ allowed: false, limits: [{ remaining: 1 }] });
    const wait = blocked.limits[0]?.retryAfterMs ?? 0;
    expect(wait).toBeGreaterThan(0);
    expect(wait).toBeLessThanOrEqual(60_000);
    expect(await client.get(key)).toBe('2');
    expect(await endOf(client, key)).toBe(end);
    // the unit left is still there for a hit that fits
    expect(await store.hit('id', [r])).toMatchObject({ allowed: true, limits: [{ remaining: 0 }] });
    expect(await client.get(key)).toBe('3');
  });

  test('a count below zero, which no hit writes, is refused and left as it was', async () => {
    const { client, store, key } = await made();
    await client.set(key, '-5', 'PX', 60_000);
    await expect(store.hit('id', [r])).rejects.toThrow(/not a FIXED_WINDOW counter/);
    expect(await client.get(key)).toBe('-5');
  });

  test('Redis runs INCRBY and PEXPIRE or PTTL for it, and DECRBY only for a blocked hit', async () => {
    const { store, key } = await made();
    const seen = await commandsOn(key, 7, async () => {
      await store.hit('id', [r]);
      await store.hit('id', [r], [2]);
      await store.hit('id', [r]);
    });
    expect(seen).toEqual(['INCRBY', 'PEXPIRE', 'INCRBY', 'PTTL', 'INCRBY', 'PTTL', 'DECRBY']);
  });
});

test('SLIDING_WINDOW, a hit of one limit that passes reads no newest unit: its own is the newest', async () => {
  const client = await connectRedis();
  const prefix = uniquePrefix();
  const store = closing(await openedRedisStore({ client, prefix, blockCache: false }));
  const r: RateLimitRule = { ...rule, action: 's', algorithm: 'SLIDING_WINDOW', limit: 2 };
  const key = counterKey(prefix, 'id', r);
  const decisions: Decision[] = [];
  const seen = await commandsOn(key, 12, async () => {
    for (let i = 0; i < 3; i++) decisions.push(await store.hit('id', [r]));
  });
  const passes = ['ZCOUNT', 'ZREMRANGEBYSCORE', 'ZADD', 'PEXPIRE'];
  // the blocked hit reads the newest and the oldest unit, and the TTL it may repair
  expect(seen).toEqual([...passes, ...passes, 'ZCOUNT', 'ZRANGE', 'PTTL', 'ZRANGE']);
  expect(decisions.map((d) => [d.allowed, d.limits[0]?.remaining])).toEqual([
    [true, 1],
    [true, 0],
    [false, 0],
  ]);
  expect(decisions[1]?.limits[0]?.resetMs).toBe(60_000);
  expect(decisions[2]?.limits[0]?.resetMs).toBeGreaterThan(0);
  expect(decisions[2]?.limits[0]?.resetMs).toBeLessThanOrEqual(60_000);
});

/** The commands Redis ran on `key` inside the store's scripts while `act` ran, in order. */
async function commandsOn(
  key: string,
  count: number,
  act: () => Promise<unknown>,
): Promise<string[]> {
  const monitor = await (await connectRedis()).monitor();
  const seen: string[] = [];
  monitor.on('monitor', (_time: string, args: string[]) => {
    const name = (args[0] ?? '').toUpperCase();
    if (args.includes(key) && !/^(EVAL|FCALL)/.test(name)) seen.push(name);
  });
  try {
    await act();
    await waitFor('the commands to be seen', () => seen.length >= count, 5_000);
  } finally {
    monitor.disconnect();
  }
  return seen;
}
