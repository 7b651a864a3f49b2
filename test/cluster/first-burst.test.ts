import { createRedisStore } from '../../src';
import { closeClient, type ClientFamily, CLIENT_FAMILIES, makeClient } from '../support/clients';
import { startCluster, type TestCluster } from '../support/cluster';
import { busyLoops } from '../support/load';
import { startRedisServer, uniquePrefix } from '../support/redis';
import { firstBurst, EXACT_BURST } from '../support/first-burst';

/*
 * A store made with its default options and used at once, without `ready()`, as most
 * applications do: its first hits arrive while it sets itself up (connection, every master's
 * version, its Lua loaded) and wait for that set-up before their own deadline starts, so the
 * first burst is exact. On a fresh single Redis and a fresh three-master Cluster (nothing loaded
 * yet), for every client family, and beside busy-looping processes. The store's options are its
 * defaults (connectWaitMs 200 ms, setupWaitMs 5 s): without the wait, hits that find the
 * connection still opening fail after connectWaitMs, whatever their deadline. The directive's own
 * `timeoutMs` is generous: 300 GraphQL operations at once on a loaded machine can outlast 250 ms
 * of CPU alone, which is not what these tests are about.
 */

/** The directive's options: a deadline for a loaded machine (docs/production.md). */
const DIRECTIVE = { timeoutMs: 10_000 };

type Where = 'Redis' | 'Cluster';

/** A fresh server of `where` for one test, and a client of `family` on it, still connecting. */
async function freshClient(family: ClientFamily, where: Where) {
  let cluster: TestCluster | undefined;
  let server: Awaited<ReturnType<typeof startRedisServer>> | undefined;
  if (where === 'Cluster') cluster = await startCluster();
  else server = await startRedisServer();
  const made = cluster ? { nodes: cluster.nodes } : { url: server?.url };
  const { client } = makeClient(family, made) as { client: unknown };
  return {
    client,
    stop: async () => {
      await closeClient(family, client);
      await cluster?.stop();
      await server?.stop();
    },
  };
}

describe.each(CLIENT_FAMILIES)('%s', (family) => {
  test.each<Where>(['Redis', 'Cluster'])(
    'fresh %s, default store options, no ready(): 50 identities x 6 hits at once, every identity exact',
    async (where) => {
      const fresh = await freshClient(family, where);
      try {
        const store = createRedisStore({ client: fresh.client as never, prefix: uniquePrefix() });
        expect(await firstBurst(store, DIRECTIVE)).toEqual(Array(50).fill(EXACT_BURST));
        await store.close();
      } finally {
        await fresh.stop();
      }
    },
    60_000,
  );
});

test.each<Where>(['Redis', 'Cluster'])(
  'beside four busy loops, fresh %s, default store options, no ready(): every identity exact',
  async (where) => {
    const loops = await busyLoops(4);
    const fresh = await freshClient('ioredis', where).catch(async (error: unknown) => {
      await loops.stop();
      throw error;
    });
    try {
      const store = createRedisStore({ client: fresh.client as never, prefix: uniquePrefix() });
      expect(await firstBurst(store, DIRECTIVE)).toEqual(Array(50).fill(EXACT_BURST));
      await store.close();
    } finally {
      await loops.stop();
      await fresh.stop();
    }
  },
  90_000,
);
