import { randomUUID } from 'node:crypto';

import { execute, parse } from 'graphql';

import { rateLimitDirective, type DecisionEvent } from '../../src';
import { closeClients, connectRedis, uniquePrefix } from '../support/redis';
import {
  BUDGET_SDL,
  budgetPerTest,
  SERVER_KINDS,
  type ServerKind,
} from '../support/budget-servers';
import { makeExecutableSchema } from '@graphql-tools/schema';
import { openedRedisStore } from '../support/stores';

/*
 * The budget never skips what it cannot price: an operation it cannot find in its document (no
 * `operationName` among several operations, or a name the document lacks) is refused before
 * any resolver runs, on every plugin, and takes nothing.
 */

afterAll(closeClients);

const HOURLY = { limit: 100, window: 3600 };
const TWO = 'query A { items(first: 50) { id } } query B { items(first: 60) { id } }';

describe.each(SERVER_KINDS)('%s', (kind: ServerKind) => {
  const events: DecisionEvent[] = [];
  const suite = budgetPerTest(kind, HOURLY);
  const serve = () => {
    events.length = 0;
    return suite.serve({ onDecision: (event) => events.push(event) });
  };

  test.each([
    ['several operations and no operationName', TWO, undefined],
    ['a name the document lacks', TWO, 'C'],
    ['a wrong name for the only operation', '{ items(first: 50) { id } }', 'C'],
  ])('%s: OPERATION_RESOLUTION_FAILURE, nothing runs or is taken', async (_, query, name) => {
    const s = await serve();
    const t = `team-${randomUUID()}`;
    const refused = await s.run(query, t, undefined, name);
    // not even taken for a moment: no store was asked
    expect(events).toHaveLength(0);
    expect(refused.body.data ?? null).toBeNull();
    expect(refused.body.errors).toHaveLength(1);
    // Yoga refuses it before envelop executes (the envelop plugin alone is tested below)
    if (kind === 'apollo') {
      expect(refused.status).toBe(400);
      expect(refused.body.errors?.[0]?.extensions?.code).toBe('OPERATION_RESOLUTION_FAILURE');
      expect(refused.body.errors?.[0]?.message).toBe(
        name === undefined
          ? 'Must provide operation name if query contains multiple operations.'
          : `Unknown operation named "${name}".`,
      );
    }
    expect(s.runs.items).toBe(0);
    expect((await s.peek({ identity: t, action: 'budget' }))[0]?.remaining).toBe(100);
    // the named operation is charged as usual
    await s.run(TWO, t, undefined, 'B');
    expect((await s.peek({ identity: t, action: 'budget' }))[0]?.remaining).toBe(40);
  });
});

test.each([undefined, 'C'])(
  'envelop told operationName %s of two (Mercurius passes none) refuses it',
  async (name) => {
    // Mercurius' hooks hand envelop's onExecute no operationName, then execute the one the
    // client named: the budget must refuse rather than let it run uncharged
    const store = await openedRedisStore({ client: await connectRedis(), prefix: uniquePrefix() });
    const directive = rateLimitDirective<{ team?: string }>({
      store,
      identify: (context) => context.team,
      budget: HOURLY,
    });
    let ran = 0;
    const schema = directive.transformer(
      makeExecutableSchema({
        typeDefs: [directive.typeDefs, BUDGET_SDL],
        resolvers: { Query: { items: () => (ran++, [{ id: '1' }]) } },
      }),
    );
    const document = parse(TWO);
    const contextValue = { team: `team-${randomUUID()}` };
    let stopped: unknown;
    const hooks = await directive.envelopPlugin.onExecute({
      args: { schema, document, contextValue, operationName: name },
      setResultAndStopExecution: (result) => (stopped = result),
    });
    expect(stopped).toMatchObject({
      errors: [{ extensions: { code: 'OPERATION_RESOLUTION_FAILURE' } }],
    });
    expect(await directive.peek({ identity: contextValue.team, action: 'budget' })).toMatchObject([
      { remaining: 100 },
    ]);
    // had it not stopped, the server would have executed `B`
    if (!stopped) await execute({ schema, document, contextValue, operationName: 'B' });
    expect(ran).toBe(0);
    expect(hooks).toBeDefined();
  },
);
