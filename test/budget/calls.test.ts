import { randomUUID } from 'node:crypto';

import type { Command } from 'ioredis';

import { createRedisStore, type RateLimitStore } from '../../src';
import { closeClients, connectRedis, uniquePrefix } from '../support/redis';
import { SERVER_KINDS, serveBudget, type BudgetServer } from '../support/budget-servers';

/*
 * What a budget costs the store: each operation takes its estimate in the batches of hits, and
 * gives back what it did not use (reading the budget as it stands) in those batches too, one
 * step each: operations running together share script calls.
 */

afterAll(closeClients);

describe.each(SERVER_KINDS)('%s', (kind) => {
  let server: BudgetServer | undefined;
  afterEach(() => server?.stop());

  test('20 operations at once: their takes and give-backs share script calls', async () => {
    const client = await connectRedis();
    const scripts: string[] = [];
    const send = client.sendCommand.bind(client);
    // counted below the store, as Redis receives them
    client.sendCommand = (command: Command, ...rest: unknown[]) => {
      if (/^eval/i.test(command.name)) scripts.push(command.name);
      return (send as (...a: unknown[]) => unknown)(command, ...rest);
    };
    const store = createRedisStore({ client, prefix: uniquePrefix() });
    const calls = { refund: 0, refundAndPeek: 0, peek: 0 };
    const counted: RateLimitStore = {
      ...store,
      refund: (...a) => (calls.refund++, store.refund!(...a)),
      refundAndPeek: (...a) => (calls.refundAndPeek++, store.refundAndPeek!(...a)),
      peek: (...a) => (calls.peek++, store.peek!(...a)),
    };
    const s = (server = await serveBudget(kind, {
      store: counted,
      budget: { limit: 1_000, window: 3600 },
    }));
    const teams = Array.from({ length: 20 }, () => `team-${randomUUID()}`);
    const answers = await Promise.all(
      teams.map((t) => s.run('{ items(first: 10, returned: 4) { id } }', t)),
    );
    for (const answer of answers) {
      expect(answer.body.extensions?.cost).toMatchObject({
        actualQueryCost: 4,
        throttleStatus: { currentlyAvailable: 996 },
      });
    }
    // one step per operation: the give-back answers the budget's state
    expect(calls).toEqual({ refund: 0, refundAndPeek: 20, peek: 0 });
    // 20 takes and 20 give-backs, in a few batches rather than a call each
    expect(scripts.length).toBeLessThanOrEqual(10);
  });
});
