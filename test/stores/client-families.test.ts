import { randomUUID } from 'node:crypto';

import { createRedisStore, RateLimitConfigError, type RateLimitRule } from '../../src';
import { counterKey } from '../../src/stores/keys';
import { luaLibrary } from '../../src/stores/redis/lua-loader';
import { releaseTogether } from '../support/barrier';
import {
  CLIENT_FAMILIES,
  closeFamilies,
  connectFamily,
  type ClientFamily,
  type FamilyClient,
} from '../support/clients';
import { startCluster, type TestCluster } from '../support/cluster';
import {
  redisUrl,
  startRedisServer,
  uniquePrefix,
  waitFor,
  type RedisProcess,
} from '../support/redis';
import { opened } from '../support/stores';

/*
 * Every client family the store accepts (ioredis, iovalkey, node-redis 6 and 5), held as an
 * application holds it, gives the same guarantees: exactly `limit` of simultaneous hits on one
 * Redis and on a three-master Cluster, hits of one pass in one or two script calls (EVALSHA, EVAL
 * only after NOSCRIPT), and the application's client left as it was, usable after `store.close()`.
 */

const LIMIT = 10;
const rule: RateLimitRule = {
  action: 'families',
  algorithm: 'FIXED_WINDOW',
  windowSeconds: 60,
  limit: LIMIT,
  cost: 1,
};
const log: RateLimitRule = { ...rule, algorithm: 'SLIDING_WINDOW', limit: 4 };
const bucket: RateLimitRule = { ...rule, algorithm: 'TOKEN_BUCKET', limit: 3 };

let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startCluster();
}, 60_000);
afterAll(async () => {
  await closeFamilies();
  await cluster?.stop();
});

/** Script calls (EVALSHA, EVAL) a server has run, from INFO commandstats. */
async function scriptCalls(
  admin: FamilyClient,
): Promise<{ fcall: number; evalsha: number; eval: number }> {
  const info = String(await admin.send(['INFO', 'commandstats']));
  const calls = (name: string) =>
    Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(info)?.[1] ?? 0);
  return { fcall: calls('fcall'), evalsha: calls('evalsha'), eval: calls('eval') };
}

/** What of an application's client a store could have changed: own properties and listeners. */
function snapshot({ client }: FamilyClient): unknown {
  const emitter = client as {
    eventNames(): (string | symbol)[];
    listenerCount(e: string | symbol): number;
  };
  return {
    own: Object.getOwnPropertyNames(client).sort(),
    listeners: emitter.eventNames().map((name) => [String(name), emitter.listenerCount(name)]),
    options: JSON.stringify((client as { options?: unknown }).options ?? null),
  };
}

describe.each(CLIENT_FAMILIES)('%s on one Redis', (family: ClientFamily) => {
  test('exactly `limit` of 100 simultaneous hits over 20 stores, each on its own client', async () => {
    const prefix = uniquePrefix();
    const results = await releaseTogether(20, async () => {
      const { client } = await connectFamily(family, { url: redisUrl() });
      const store = await opened(createRedisStore({ client, prefix }));
      return () => Promise.all(Array.from({ length: 5 }, () => store.hit('team-1', [rule, log])));
    });
    const allowed = results.flat().filter((d) => d.allowed);
    expect(allowed).toHaveLength(log.limit);
    const admin = await connectFamily(family, { url: redisUrl() });
    expect(await admin.send(['GET', counterKey(prefix, 'team-1', rule)])).toBe(String(log.limit));
    expect(await admin.send(['ZCARD', counterKey(prefix, 'team-1', log)])).toBe(log.limit);
  });

  test('every algorithm, peek and reset decide alike', async () => {
    const { client } = await connectFamily(family, { url: redisUrl() });
    const store = await opened(createRedisStore({ client, prefix: uniquePrefix() }));
    const rules = [rule, log, bucket];
    const passed = [];
    for (let i = 0; i < 4; i++) passed.push((await store.hit('alike', rules)).allowed);
    expect(passed).toEqual([true, true, true, false]);
    const states = await store.peek?.('alike', rules);
    expect(states?.map((s) => s.remaining)).toEqual([LIMIT - 3, 1, 0]);
    await store.reset?.('alike', rules);
    expect((await store.hit('alike', rules)).allowed).toBe(true);
    await store.close?.();
  });

  describe('on a Redis of its own', () => {
    let redis: RedisProcess;
    let admin: FamilyClient;
    beforeAll(async () => {
      redis = await startRedisServer();
      admin = await connectFamily(family, { url: redis.url });
    });
    afterAll(async () => {
      await admin.close();
      await redis.stop();
    });

    test('FCALL for a pass of hits, and after FUNCTION FLUSH the library is loaded again, each hit counted once', async () => {
      const { client } = await connectFamily(family, { url: redis.url });
      const store = await opened(
        createRedisStore({ client, prefix: uniquePrefix(), blockCache: false }),
      );
      await store.ready?.();
      await store.hit('warm', [rule]);
      const before = await scriptCalls(admin);
      const batch = await Promise.all(
        Array.from({ length: 100 }, (_, i) => store.hit(`id-${i % 25}`, [rule])),
      );
      expect(batch.filter((d) => d.allowed)).toHaveLength(100);
      const after = await scriptCalls(admin);
      // one pass of 100 hits with no call out: two calls of 50 (src/stores/redis/hit-batches.ts)
      expect(after).toEqual({ ...before, fcall: before.fcall + 2 });

      await admin.send(['FUNCTION', 'FLUSH']);
      await admin.send(['SCRIPT', 'FLUSH']);
      const reloaded = await Promise.all(Array.from({ length: 10 }, () => store.hit('x', [rule])));
      expect(reloaded.filter((d) => d.allowed)).toHaveLength(LIMIT);
      expect(JSON.stringify(await admin.send(['FUNCTION', 'LIST']))).toContain(luaLibrary().name);
      const flushed = await scriptCalls(admin);
      await store.hit('x', [rule]);
      expect(await scriptCalls(admin)).toEqual({ ...flushed, fcall: flushed.fcall + 1 });
    });

    test("the application's client is left as it was, and stays usable after store.close()", async () => {
      const name = `owner-${randomUUID()}`;
      const given = await connectFamily(family, {
        url: redis.url,
        options: family.startsWith('node-redis') ? { name } : { connectionName: name },
      });
      const before = snapshot(given);
      const store = await opened(
        createRedisStore({ client: given.client, prefix: uniquePrefix() }),
      );
      await store.hit('kept', [rule]);
      await store.reset?.('kept', [rule]);
      expect(snapshot(given)).toEqual(before);
      const named = async () =>
        String(await admin.send(['CLIENT', 'LIST']))
          .split('\n')
          .filter((line) => line.includes(` name=${name} `)).length;
      // the store's own connection carries the client's name: two connections
      expect(await named()).toBe(2);
      await store.close?.();
      await waitFor("the store's connection to close", async () => (await named()) === 1);
      expect(await given.send(['PING'])).toBe('PONG');
      expect(snapshot(given)).toEqual(before);
      await expect(store.hit('kept', [rule])).rejects.toThrow(/closed/);
    });

    test("closing the application's client closes the store's connection", async () => {
      const name = `follow-${randomUUID()}`;
      const given = await connectFamily(family, {
        url: redis.url,
        options: family.startsWith('node-redis') ? { name } : { connectionName: name },
      });
      const store = await opened(
        createRedisStore({ client: given.client, prefix: uniquePrefix() }),
      );
      await store.hit('following', [rule]);
      await given.close();
      await waitFor(
        "the store's connection to close",
        async () => !String(await admin.send(['CLIENT', 'LIST'])).includes(` name=${name} `),
      );
      await expect(store.hit('following', [rule])).rejects.toThrow(/closed/);
    });
  });
});

describe.each(CLIENT_FAMILIES)('%s, while Redis is down', (family: ClientFamily) => {
  test("closing the application's client closes the store's connection too", async () => {
    const redis = await startRedisServer();
    const given = await connectFamily(family, { url: redis.url });
    const store = await opened(createRedisStore({ client: given.client, prefix: uniquePrefix() }));
    await store.hit('down', [rule]);
    await redis.stop();
    // both connections now try to reconnect; the application gives its client up meanwhile
    await waitFor('the client to notice', () => given.errors.length > 0);
    given.drop();
    // the store's connection stops reconnecting: its hits fail as closed, not as unready
    await waitFor('the store to close', async () =>
      store.hit('down', [rule]).then(
        () => false,
        (error: Error) => /closed/.test(error.message),
      ),
    );
  });
});

describe.each(CLIENT_FAMILIES)('%s on a three-master Cluster', (family: ClientFamily) => {
  test('exactly `limit` per identity of simultaneous hits over 6 stores and 60 identities', async () => {
    const prefix = uniquePrefix();
    const ids = Array.from({ length: 60 }, (_, i) => `team-${i}`);
    const results = await releaseTogether(6, async () => {
      const { client } = await connectFamily(family, { nodes: cluster.nodes });
      const store = await opened(createRedisStore({ client, prefix }));
      return () =>
        Promise.all(
          ids.flatMap((id) =>
            Array.from({ length: 2 }, async () => ({
              id,
              allowed: (await store.hit(id, [{ ...rule, limit: 5 }])).allowed,
            })),
          ),
        );
    });
    const hits = results.flat();
    for (const id of ids) expect(hits.filter((h) => h.id === id && h.allowed)).toHaveLength(5);
  });

  test('one script call per master for a batch of many identities', async () => {
    const prefix = uniquePrefix();
    const { client } = await connectFamily(family, { nodes: cluster.nodes });
    const store = await opened(createRedisStore({ client, prefix, blockCache: false }));
    const masters = await Promise.all(
      cluster.nodes.map((n) => connectFamily(family, { url: `redis://${n.host}:${n.port}` })),
    );
    const calls = async () =>
      Promise.all(
        masters.map(async (m) => Object.values(await scriptCalls(m)).reduce((a, b) => a + b)),
      );
    // warm every master's script cache, so that no NOSCRIPT round trip is counted
    await Promise.all(Array.from({ length: 30 }, (_, i) => store.hit(`warm-${i}`, [rule])));
    const before = await calls();
    const ids = Array.from({ length: 60 }, (_, i) => `team-${i}`);
    const decided = await Promise.all(ids.map((id) => store.hit(id, [rule])));
    expect(decided.every((d) => d.allowed)).toBe(true);
    const after = await calls();
    expect(after.map((n, i) => n - (before[i] as number))).toEqual(masters.map(() => 1));
  });

  test('a hit of two identities on two masters passes only within both limits', async () => {
    const prefix = uniquePrefix();
    const byIp: RateLimitRule = { ...rule, action: 'login-ip', limit: 2, by: 'ip' };
    const perEmail: RateLimitRule = { ...rule, action: 'login', limit: 3 };
    const { client } = await connectFamily(family, { nodes: cluster.nodes });
    const store = await opened(createRedisStore({ client, prefix }));
    const outcomes = [];
    for (let i = 0; i < 4; i++) {
      outcomes.push(
        (await store.hit([`user-${i}@example.com`, '10.0.0.1'], [perEmail, byIp])).allowed,
      );
    }
    expect(outcomes).toEqual([true, true, false, false]);
    await store.close?.();
  });
});

test('a client of no known family is refused with what it was', () => {
  expect(() => createRedisStore({ client: {} as never })).toThrow(RateLimitConfigError);
  expect(() => createRedisStore({ client: new Map() as never })).toThrow(/node-redis.*got a Map/);
});

test('an object shaped almost like a node-redis client is refused, naming what it lacks', () => {
  const lookalike = {
    isOpen: false,
    isReady: false,
    connect: async () => undefined,
    sendCommand: async () => 'OK',
    duplicate() {
      return {
        isOpen: false,
        isReady: false,
        connect: this.connect,
        sendCommand: this.sendCommand,
      };
    },
  };
  const made = () => createRedisStore({ client: lookalike });
  expect(made).toThrow(RateLimitConfigError);
  expect(made).toThrow(
    /looks like a node-redis client, but what its duplicate\(\) returned has no on\(\), once\(\), off\(\)/,
  );
  const cluster = { ...lookalike, masters: [], nodeClient: () => undefined, duplicate: () => null };
  expect(() => createRedisStore({ client: cluster })).toThrow(
    /node-redis cluster, but what its duplicate\(\) returned has no connect\(\), sendCommand\(\)/,
  );
});
