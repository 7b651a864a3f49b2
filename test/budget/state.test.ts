import { randomUUID } from 'node:crypto';

import { createMemoryStore, type RateLimitStore } from '../../src';
import { RATE_ALGORITHMS } from '../support/algorithms';
import { waitFor } from '../support/processes';
import { closeClients, connectRedis, uniquePrefix } from '../support/redis';
import {
  SERVER_KINDS,
  serveBudget,
  type BudgetServer,
  type ServerKind,
} from '../support/budget-servers';
import { openedRedisStore } from '../support/stores';

/*
 * `throttleStatus.currentlyAvailable` and the budget's `RateLimit: "budget";r=` are the budget
 * as it stands once this operation's unused points went back, whatever happened to it while the
 * operation ran: other operations taking from it, a reset. An operation with nothing to give
 * back makes no second store call: it reports what the store answered its take. Two operations
 * in flight at once, the first held in its resolver by a gate. A budget of 100 an hour: nothing
 * refills meanwhile.
 */

afterAll(closeClients);

const STORES = ['redis', 'memory'] as const;
const makeStore = async (kind: (typeof STORES)[number]): Promise<RateLimitStore> =>
  kind === 'redis'
    ? await openedRedisStore({ client: await connectRedis(), prefix: uniquePrefix() })
    : createMemoryStore();

describe.each(SERVER_KINDS)('%s', (kind: ServerKind) => {
  describe.each(STORES)('%s store', (storeKind) => {
    let server: BudgetServer | undefined;
    afterEach(() => server?.stop());

    test.each(RATE_ALGORITHMS)(
      '%s: A takes 10 and waits, B takes 50, A refunds 8 and reports 48, as peek does',
      async (algorithm) => {
        const store = await makeStore(storeKind);
        const s = (server = await serveBudget(kind, {
          store,
          budget: { limit: 100, window: 3600, algorithm },
        }));
        const t = `team-${randomUUID()}`;
        const a = s.run('{ gated(first: 10, returned: 2) { id } }', t);
        await waitFor('A in its resolver', () => s.runs.gated === 1);
        const b = await s.run('{ items(first: 50) { id } }', t);
        expect(b.body.extensions?.cost.throttleStatus.currentlyAvailable).toBe(40);
        s.gate.open();
        const done = await a;
        const left = (await s.peek({ identity: t, action: 'budget' }))[0]?.remaining;
        expect(left).toBe(48);
        expect(done.body.extensions?.cost).toMatchObject({
          requestedQueryCost: 10,
          actualQueryCost: 2,
          throttleStatus: { currentlyAvailable: 48 },
        });
        expect(done.header('ratelimit')).toMatch(/^"budget";r=48;t=\d+$/);
      },
    );

    test.each(RATE_ALGORITHMS)(
      '%s: a reset while A runs: A reports the whole budget it left',
      async (algorithm) => {
        const store = await makeStore(storeKind);
        const s = (server = await serveBudget(kind, {
          store,
          budget: { limit: 100, window: 3600, algorithm },
        }));
        const t = `team-${randomUUID()}`;
        const a = s.run('{ gated(first: 10, returned: 2) { id } }', t);
        await waitFor('A in its resolver', () => s.runs.gated === 1);
        await s.reset({ identity: t, action: 'budget' });
        s.gate.open();
        const done = await a;
        // its points were taken from a budget the reset made whole: none go back, none are owed
        expect((await s.peek({ identity: t, action: 'budget' }))[0]?.remaining).toBe(100);
        expect(done.body.extensions?.cost.throttleStatus.currentlyAvailable).toBe(100);
        expect(done.header('ratelimit')).toMatch(/^"budget";r=100;t=\d+$/);
      },
    );

    test('nothing to refund: no second store call, the budget as the take left it', async () => {
      const store = await makeStore(storeKind);
      const s = (server = await serveBudget(kind, { store, budget: { limit: 100, window: 3600 } }));
      const t = `team-${randomUUID()}`;
      const a = s.run('{ gated(first: 10, returned: 10) { id } }', t);
      await waitFor('A in its resolver', () => s.runs.gated === 1);
      await s.run('{ items(first: 30) { id } }', t);
      s.gate.open();
      const done = await a;
      // what the store answered A's take: B's 30 came after it
      expect(done.body.extensions?.cost).toMatchObject({
        actualQueryCost: 10,
        throttleStatus: { currentlyAvailable: 90 },
      });
      expect(done.header('ratelimit')).toMatch(/^"budget";r=90;t=\d+$/);
      expect((await s.peek({ identity: t, action: 'budget' }))[0]?.remaining).toBe(60);
    });
  });
});
