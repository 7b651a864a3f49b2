import { randomUUID } from 'node:crypto';

import type { Redis } from 'ioredis';

import { createRedisStore, type RateLimitStore } from '../../src';
import { waitFor } from '../support/processes';
import { closeClients, connectRedis, uniquePrefix } from '../support/redis';
import { SERVER_KINDS, serveBudget, type BudgetServer } from '../support/budget-servers';

/*
 * What a budget costs the store: each operation takes its estimate in the batches of hits, and
 * gives back what it did not use (reading the budget as it stands) in those batches too, one
 * step each: operations running together share script calls. An operation with nothing to give
 * back makes no second call. Script calls are counted as Redis receives them (MONITOR), on the
 * store's own connection.
 */

afterAll(closeClients);

/** Every script call Redis receives naming a key under `prefix`, until `stop`. */
async function scriptCalls(prefix: string): Promise<{ calls: string[][]; stop(): void }> {
  const monitor = await (await connectRedis()).monitor();
  const calls: string[][] = [];
  monitor.on('monitor', (_time: string, args: string[]) => {
    if (/^eval/i.test(args[0] ?? '') && args.some((a) => a.startsWith(prefix))) calls.push(args);
  });
  return { calls, stop: () => monitor.disconnect() };
}

/** The store of `client`, with its calls of `refund`, `refundAndPeek` and `peek` counted. */
function countedStore(client: Redis, prefix: string) {
  const store = createRedisStore({ client, prefix });
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
    ['gives 6 back', 4, 996, { refund: 0, refundAndPeek: 20, peek: 0 }],
    ['has nothing to give back', 10, 990, { refund: 0, refundAndPeek: 0, peek: 0 }],
  ] as const)(
    '20 operations at once, each of which %s: takes and give-backs share script calls',
    async (_what, returned, left, storeCalls) => {
      const prefix = uniquePrefix();
      const { store, calls } = countedStore(await connectRedis(), prefix);
      const s = (server = await serveBudget(kind, {
        store,
        budget: { limit: 1_000, window: 3600 },
      }));
      const teams = Array.from({ length: 20 }, () => `team-${randomUUID()}`);
      // the store's connection is open before the operations start, so they can share calls
      await s.run('{ items(first: 1, returned: 1) { id } }', `team-${randomUUID()}`);
      Object.assign(calls, { refund: 0, refundAndPeek: 0, peek: 0 });
      const monitor = await scriptCalls(prefix);
      // what each call decided, per hit: a take asks for its receipt (`r1`), a give-back is `g1`
      const asked = (marker: string) => monitor.calls.flat().filter((a) => a === marker).length;
      const giveBacks = returned === 10 ? 0 : 20;
      try {
        const answers = await Promise.all(
          teams.map((t) => s.run(`{ items(first: 10, returned: ${returned}) { id } }`, t)),
        );
        for (const answer of answers) {
          expect(answer.body.extensions?.cost).toMatchObject({
            actualQueryCost: returned,
            throttleStatus: { currentlyAvailable: left },
          });
        }
        await waitFor(
          'Redis to see every take and give-back',
          () => asked('r1') === 20 && asked('g1') === giveBacks,
          5_000,
        );
      } finally {
        monitor.stop();
      }
      expect(asked('g1')).toBe(giveBacks);
      // one step per operation with something to give back: the give-back answers the state
      expect(calls).toEqual(storeCalls);
      // operations that start together share calls (Fastify's inject starts each request in a
      // turn of its own, as separate HTTP requests would be)
      if (kind !== 'mercurius')
        expect(monitor.calls.length).toBeLessThanOrEqual(returned === 10 ? 5 : 10);
    },
  );
});
