import { isAsyncIterable } from '@graphql-tools/utils';
import { parse, subscribe, type ExecutionResult } from 'graphql';

import { releaseTogether } from '../support/barrier';
import { closeClients } from '../support/redis';
import { limitedSchema } from '../support/schema';
import { freshStore } from '../support/stores';

/*
 * @rateLimit on a Subscription field counts starts (its `subscribe`), not events (its `resolve`),
 * through graphql-js' own subscribe, as every server calls it.
 */

afterAll(closeClients);

const SDL = `
  type Query { ok: Boolean }
  type Subscription {
    ticks: Int @rateLimit(action: "ticks", window: 60, limit: 2)
    "No subscribe of its own: graphql-js' default reads the root value."
    fromRoot: Int @rateLimit(action: "root", window: 60, limit: 2)
  }
`;

function app() {
  const runs = { subscribe: 0, resolve: 0 };
  async function* three() {
    for (let i = 1; i <= 3; i++) yield { ticks: i };
  }
  const resolvers = {
    Subscription: {
      ticks: {
        subscribe: () => (runs.subscribe++, three()),
        resolve: (event: { ticks: number }) => (runs.resolve++, event.ticks),
      },
    },
  };
  return { runs, resolvers };
}

async function started(result: AsyncIterable<ExecutionResult> | ExecutionResult) {
  if (!isAsyncIterable(result)) return result.errors?.[0]?.extensions?.code;
  const events = [];
  for await (const event of result) events.push(event.data);
  return events;
}

test('5 simultaneous starts of one identity: exactly `limit` make a source stream', async () => {
  const { store } = await freshStore('redis');
  const { runs, resolvers } = app();
  const schema = limitedSchema(SDL, resolvers, { store, identify: () => 'team' });
  const outcomes = await releaseTogether(5, async () => async () => {
    const result = await subscribe({
      schema,
      document: parse('subscription { ticks }'),
      contextValue: {},
    });
    return started(result);
  });
  const streams = outcomes.filter(Array.isArray);
  expect(streams).toHaveLength(2);
  expect(outcomes.filter((o) => o === 'RATE_LIMITED')).toHaveLength(3);
  expect(runs.subscribe).toBe(2);
  // each event resolves unlimited: the limit of 2 counted starts, not the 6 events
  expect(streams).toEqual(Array(2).fill([{ ticks: 1 }, { ticks: 2 }, { ticks: 3 }]));
  expect(runs.resolve).toBe(6);
});

test('a field with no subscribe: the root value is its source, and its starts are counted', async () => {
  const { store } = await freshStore('redis');
  const schema = limitedSchema(SDL, {}, { store, identify: () => 'team' });
  const outcomes = [];
  for (let i = 0; i < 3; i++) {
    async function* one() {
      yield { fromRoot: i };
    }
    const result = await subscribe({
      schema,
      document: parse('subscription { fromRoot }'),
      rootValue: { fromRoot: one() },
      contextValue: {},
    });
    outcomes.push(await started(result));
  }
  expect(outcomes).toEqual([[{ fromRoot: 0 }], [{ fromRoot: 1 }], 'RATE_LIMITED']);
});
