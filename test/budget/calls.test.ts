import { randomUUID } from 'node:crypto';

import type { Redis } from 'ioredis';

import { createRedisStore, type RateLimitStore } from '../../src';
import { connectRedis, ownRedis, scriptCalls, uniquePrefix, waitFor } from '../support/redis';
import { SERVER_KINDS, serveBudget, type BudgetServer } from '../support/budget-servers';

/*
 * What a budget costs the store: each operation takes its estimate in the batches of hits, and
 * refunds what it did not use (reading the budget as it stands) in those batches too, one
 * step each: operations running together share script calls. An operation with nothing to give
 * back makes no second call. Script calls are counted by the Redis that runs them (INFO
 * commandstats), a Redis of this file's own so that no other test's calls count.
 */

const redis = ownRedis();

/** The store of `client`, with its calls of `refund`, `refundAndPeek` and `peek` counted. */
function countedStore(client: Redis) {
  const store = createRedisStore({ client, prefix: uniquePrefix() });
  const calls = { refund: 0, refundAndPeek: 0, peek: 0 };
  const counted: RateLimitStore = {
    ...store,
    refund: (...a) => (calls.refund++, store.refund!(...a)),
    refundAndPeek: (...a) => (calls.refundAndPeek++, store.refundAndPeek!(...a)),
    peek: (...a) => (calls.peek++, store.peek!(...a)),
  };
  return { store: counted, calls };
}

describe.each(SERVER_KINDS)('%s', (kind) => {
  let server: BudgetServer | undefined;
  afterEach(() => server?.stop());

  test.each([
    ['refunds 6', 4, 996, { refund: 0, refundAndPeek: 20, peek: 0 }],
    ['has nothing to refund', 10, 990, { refund: 0, refundAndPeek: 0, peek: 0 }],
  ] as const)(
    '20 operations at once, each of which %s: takes and refunds share script calls',
    async (_what, returned, left, storeCalls) => {
      const admin = await connectRedis({}, redis.url());
      const { store, calls } = countedStore(await connectRedis({}, redis.url()));
      // the set-up's own calls (its FCALL check) are not the operations'
      await store.ready?.();
      const s = (server = await serveBudget(kind, {
        store,
        budget: { limit: 1_000, window: 3600 },
        // counted here are calls, not deadlines: a loaded machine's slow moment fails none
        timeoutMs: 5_000,
      }));
      // the store's connection is open before the operations start, so they can share calls:
      // an operation is charged (a cold start on a loaded machine may fail the first ones)
      await waitFor('an operation to be charged', async () => {
        const warm = await s.run('{ items(first: 1, returned: 1) { id } }', `team-${randomUUID()}`);
        const cost = warm.body.extensions?.cost as
          { throttleStatus: { currentlyAvailable: number | null } } | undefined;
        return typeof cost?.throttleStatus.currentlyAvailable === 'number';
      });
      Object.assign(calls, { refund: 0, refundAndPeek: 0, peek: 0 });
      const before = await scriptCalls(admin);
      const teams = Array.from({ length: 20 }, () => `team-${randomUUID()}`);
      const answers = await Promise.all(
        teams.map((t) => s.run(`{ items(first: 10, returned: ${returned}) { id } }`, t)),
      );
      for (const answer of answers) {
        expect(answer.body.extensions?.cost).toMatchObject({
          actualQueryCost: returned,
          throttleStatus: { currentlyAvailable: left },
        });
      }
      // one step per operation with something to refund: the refund answers the state
      expect(calls).toEqual(storeCalls);
      const made = (await scriptCalls(admin)) - before;
      expect(made).toBeGreaterThan(0);
      // 20 takes (and 20 refunds) in a few calls rather than a call each; Fastify's inject
      // starts each request in a turn of its own, as separate HTTP requests would be
      if (kind !== 'mercurius') expect(made).toBeLessThanOrEqual(returned === 10 ? 4 : 10);
      else expect(made).toBeLessThanOrEqual(returned === 10 ? 20 : 40);
    },
  );
});
