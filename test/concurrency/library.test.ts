import type { Redis } from 'ioredis';

import { createRedisStore, type RateLimitRule, type RateLimitStore } from '../../src';
import { counterKey } from '../../src/stores/keys';
import { luaLibrary } from '../../src/stores/redis/lua-loader';
import { connectRedis, startRedisServer, uniquePrefix, type RedisProcess } from '../support/redis';
import { closeClients } from '../support/redis';
import { opened } from '../support/stores';

/*
 * The release and renewal of a lease are calls of the store's Lua like its hits: the library's
 * `<name>_lease` function (FCALL) where Redis has functions, else lua/lease.lua (EVALSHA, EVAL
 * after NOSCRIPT), loaded by the same set-up and loaded again when a flush dropped it.
 */

const rule: RateLimitRule = {
  action: 'leased',
  algorithm: 'CONCURRENCY',
  windowSeconds: 5,
  limit: 3,
  cost: 1,
};

/** Calls of each scripting command the Redis `admin` talks to has run. */
async function calls(admin: Redis): Promise<{ fcall: number; evalsha: number; eval: number }> {
  const stats = await admin.info('commandstats');
  const count = (name: string) =>
    Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
  return { fcall: count('fcall'), evalsha: count('evalsha'), eval: count('eval') };
}

describe.each([
  ['with Redis Functions', [] as string[]],
  ['without functions (FUNCTION refused)', ['--rename-command', 'FUNCTION', '']],
])('%s', (_name, args) => {
  const functions = args.length === 0;
  let redis: RedisProcess;
  let admin: Redis;
  let store: RateLimitStore;
  let prefix: string;
  beforeAll(async () => {
    redis = await startRedisServer(undefined, { args });
    admin = await connectRedis({}, redis.url);
  });
  beforeEach(async () => {
    prefix = uniquePrefix();
    store = await opened(createRedisStore({ client: await connectRedis({}, redis.url), prefix }));
    await store.ready?.();
  });
  afterEach(() => store.close?.());
  afterAll(async () => {
    await closeClients();
    await redis.stop();
  });
  const held = () => admin.zcard(counterKey(prefix, 'id', rule));

  test('release and renew are one call each, of the function or of the script', async () => {
    if (functions) {
      expect(JSON.stringify(await admin.call('FUNCTION', 'LIST'))).toContain(luaLibrary().lease);
    }
    const { lease } = await store.hit('id', [rule]);
    if (!lease) throw new Error('an allowed CONCURRENCY hit has a lease');
    expect(await held()).toBe(1);
    const before = await calls(admin);
    expect(await store.renew?.(lease)).toBe(true);
    await store.release?.(lease);
    expect(await held()).toBe(0);
    const after = await calls(admin);
    expect(after).toEqual(
      functions
        ? { ...before, fcall: before.fcall + 2 }
        : { ...before, evalsha: before.evalsha + 2 },
    );
    // released: a renewal brings nothing back
    expect(await store.renew?.(lease)).toBe(false);
    expect(await held()).toBe(0);
  });

  test('the releases of one turn share one call with the hits of that turn', async () => {
    const leases = await Promise.all([1, 2, 3].map(() => store.hit('id', [rule])));
    expect(await held()).toBe(3);
    const before = await calls(admin);
    const released = leases.map(({ lease }) => {
      if (!lease || !store.release) throw new Error('an allowed CONCURRENCY hit has a lease');
      return store.release(lease);
    });
    // queued after the releases of its turn: decided once they freed their slots
    const next = await store.hit('id', [rule], [3]);
    await Promise.all(released);
    const after = await calls(admin);
    expect(after).toEqual(
      functions
        ? { ...before, fcall: before.fcall + 1 }
        : { ...before, evalsha: before.evalsha + 1 },
    );
    expect(next.allowed).toBe(true);
    expect(await held()).toBe(3);
  });

  test('after a flush of the Lua, a renewal and a release still reach their slots', async () => {
    const { lease } = await store.hit('id', [rule]);
    if (!lease) throw new Error('an allowed CONCURRENCY hit has a lease');
    if (functions) await admin.call('FUNCTION', 'FLUSH');
    await admin.call('SCRIPT', 'FLUSH');
    expect(await store.renew?.(lease)).toBe(true);
    expect(await held()).toBe(1);
    await store.release?.(lease);
    expect(await held()).toBe(0);
    if (functions) {
      expect(JSON.stringify(await admin.call('FUNCTION', 'LIST'))).toContain(luaLibrary().lease);
    }
  });
});
