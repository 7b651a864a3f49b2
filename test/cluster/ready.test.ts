import type { Cluster } from 'ioredis';

import { createRedisStore } from '../../src';
import { startCluster, type TestCluster } from '../support/cluster';
import { uniquePrefix } from '../support/redis';
import { EXACT_BURST, firstBurst } from '../support/first-burst';

/*
 * A store sets itself up (connection, every master's version, its Lua loaded on every master)
 * when it is made, not inside its first hits' deadlines: once `ready()` resolved, a burst on a
 * fresh store sends nothing but its FCALLs (no INFO, no loading, no EVAL) and is decided
 * exactly, and so it is after FUNCTION FLUSH and SCRIPT FLUSH (the library is loaded again, and
 * the calls that found it missing are sent again, counted once). The burst is 300 GraphQL
 * operations at once: on a busy 2-core machine their execution alone can outlast the default
 * 250 ms, which is not what these tests are about, so they give each a generous `timeoutMs`.
 */

let cluster: TestCluster;

beforeAll(async () => {
  cluster = await startCluster();
}, 60_000);
afterAll(async () => {
  await cluster?.stop();
});

/** The burst, each hit with a generous deadline (see above). */
const burst = (tag: string, store: ReturnType<typeof createRedisStore>) =>
  firstBurst(store, { timeoutMs: 10_000 }, tag);

const EXACT = EXACT_BURST;

/** Calls of each command Redis ran at the top level that set-up sends, summed over masters. */
const COMMANDS = ['fcall', 'eval', 'evalsha', 'function|load', 'function|list', 'script|load'];

async function setupCalls(
  client: Cluster,
): Promise<{ info: number; fcall: number; all: number[] }> {
  const all = COMMANDS.map(() => 0);
  let info = 0;
  for (const node of client.nodes('master')) {
    const stats = String(await node.info('commandstats'));
    const calls = (name: string): number =>
      Number(new RegExp(`cmdstat_${name.replace('|', '\\|')}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
    COMMANDS.forEach((name, i) => (all[i] = (all[i] as number) + calls(name)));
    info += calls('info');
  }
  return { info, fcall: all[0] as number, all };
}

test('50 identities x 6 hits at once on a fresh store, after ready(): FCALLs alone, every identity exact', async () => {
  const client = await cluster.connect();
  const store = createRedisStore({ client, prefix: uniquePrefix() });
  await store.ready?.();
  const before = await setupCalls(client);
  expect(await burst('', store)).toEqual(Array(50).fill(EXACT));
  const after = await setupCalls(client);
  // nothing but FCALLs: no EVAL, no loading, no INFO (one per master reads commandstats)
  expect(after.all.slice(1)).toEqual(before.all.slice(1));
  expect(after.info).toBe(before.info + client.nodes('master').length);
  expect(after.fcall).toBeGreaterThan(before.fcall);
  await store.close?.();
}, 60_000);

test('after FUNCTION FLUSH and SCRIPT FLUSH on every master, decisions stay exact', async () => {
  const client = await cluster.connect();
  // a call that found the library missing is sent again while its hits may wait (connectWaitMs)
  const store = createRedisStore({ client, prefix: uniquePrefix(), connectWaitMs: 5_000 });
  await store.ready?.();
  for (const node of client.nodes('master')) {
    await node.call('FUNCTION', 'FLUSH');
    await node.call('SCRIPT', 'FLUSH');
  }
  expect(await burst('flushed-', store)).toEqual(Array(50).fill(EXACT));
  // the library is back on every master, and the next burst goes by FCALL
  for (const node of client.nodes('master')) {
    expect(String(await node.call('FUNCTION', 'LIST'))).toMatch(/graphql_atomic_rate_limit_/);
  }
  expect(await burst('again-', store)).toEqual(Array(50).fill(EXACT));
  await store.close?.();
}, 60_000);
