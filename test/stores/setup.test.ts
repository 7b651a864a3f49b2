import type { Redis } from 'ioredis';

import { createRedisStore, WARNING_CODES, type RateLimitRule } from '../../src';
import { counterKey } from '../../src/stores/keys';
import { luaLibrary } from '../../src/stores/redis/lua-loader';
import { closeClients, connectRedis, ownRedis, uniquePrefix } from '../support/redis';

/*
 * The store's set-up on a server it may not use as it would like: an ACL user who may load the
 * Functions library but not call it (the store must fall back to the scripts, not resolve
 * ready() into a store that refuses every hit NOPERM), and a library of someone else under the
 * package's library name (left alone, not called, one warning).
 */

const redis = ownRedis();
let admin: Redis;

beforeAll(async () => {
  admin = await connectRedis({}, redis.url());
});
afterAll(() => closeClients());

let emitWarning: jest.SpyInstance;
beforeEach(() => {
  emitWarning = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
});
afterEach(() => emitWarning.mockRestore());

const warningCodes = (): unknown[] =>
  emitWarning.mock.calls.map(([, options]) => (options as { code?: string } | undefined)?.code);

const LIMIT = 5;
const rule: RateLimitRule = {
  action: 'setup',
  algorithm: 'FIXED_WINDOW',
  windowSeconds: 60,
  limit: LIMIT,
  cost: 1,
};

/** A store on the own Redis as `user` (the default user when undefined), ready. */
async function readyStore(user?: { name: string; password: string }) {
  const url = new URL(redis.url());
  if (user) {
    url.username = user.name;
    url.password = user.password;
  }
  const prefix = uniquePrefix();
  const client = await connectRedis({}, url.toString());
  // every hit goes to the server, none answered by the block cache
  const store = createRedisStore({ client, prefix, blockCache: false });
  await store.ready?.();
  return { store, prefix, client };
}

/** LIMIT + 3 hits in a row on one identity: how many passed, and what the counter holds. */
async function burst(store: Awaited<ReturnType<typeof readyStore>>) {
  const decisions = [];
  for (let i = 0; i < LIMIT + 3; i++) decisions.push(await store.store.hit('team-1', [rule]));
  const counted = Number(await admin.get(counterKey(store.prefix, 'team-1', rule)));
  return { passed: decisions.filter((d) => d.allowed).length, counted };
}

afterEach(async () => {
  await admin.call('FUNCTION', 'FLUSH');
  await admin.call('ACL', 'DELUSER', 'loader');
});

test('a user who may FUNCTION LOAD but not FCALL: ready() and every hit decide through EVALSHA', async () => {
  await admin.call(
    'ACL',
    'SETUSER',
    'loader',
    'on',
    '>loader-password',
    '~*',
    '&*',
    '+@all',
    '-fcall',
    '-fcall_ro',
  );
  const store = await readyStore({ name: 'loader', password: 'loader-password' });
  // the user did load the library: only calling it is denied
  expect(JSON.stringify(await admin.call('FUNCTION', 'LIST'))).toContain(luaLibrary().name);
  expect(await burst(store)).toEqual({ passed: LIMIT, counted: LIMIT });
  await store.store.close?.();
  // before the user goes: its client would reconnect as a user that is no more
  await store.client.quit();
});

test('a foreign library under the package name: not replaced, not called, one warning', async () => {
  const { name } = luaLibrary();
  // someone else's code, with a function named as ours would be
  const theirs =
    `#!lua name=${name}\n` +
    `redis.register_function('${name}_hit', function() return redis.error_reply('NOT OURS') end)`;
  await admin.call('FUNCTION', 'LOAD', theirs);
  const first = await readyStore();
  const second = await readyStore();
  expect(warningCodes()).toEqual([WARNING_CODES.FOREIGN_LIBRARY]);
  expect(String(emitWarning.mock.calls[0]?.[0])).toMatch(/neither replaced nor called/);
  // still theirs, and the hits are decided by the store's own scripts
  expect(JSON.stringify(await admin.call('FUNCTION', 'LIST', 'WITHCODE'))).toContain('NOT OURS');
  expect(await burst(first)).toEqual({ passed: LIMIT, counted: LIMIT });
  expect(await burst(second)).toEqual({ passed: LIMIT, counted: LIMIT });
  expect(JSON.stringify(await admin.call('FUNCTION', 'LIST', 'WITHCODE'))).toContain('NOT OURS');
  await first.store.close?.();
  await second.store.close?.();
});

test('a server without the library: loaded once, called with FCALL', async () => {
  const store = await readyStore();
  expect(JSON.stringify(await admin.call('FUNCTION', 'LIST'))).toContain(luaLibrary().hit);
  const calls = async () => {
    const stats = await admin.info('commandstats');
    const count = (name: string) =>
      Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
    return { fcall: count('fcall') };
  };
  const before = await calls();
  expect(await burst(store)).toEqual({ passed: LIMIT, counted: LIMIT });
  const after = await calls();
  // the hits are calls of the library (a set-up made anew may add its one probe)
  expect(after.fcall - before.fcall).toBeGreaterThanOrEqual(LIMIT + 3);
  expect(warningCodes()).toEqual([]);
  await store.store.close?.();
});
