import { makeExecutableSchema } from '@graphql-tools/schema';
import { graphql } from 'graphql';

import { createMemoryStore, rateLimitDirective, type DecisionEvent } from '../../src';
import { decisionsOf } from '../../src/decision-events';

/*
 * Each request's decisions are kept (by its context, weakly) for a server plugin to turn into
 * headers. `transformer` alone has no plugin to read them: nothing is kept per request until a
 * plugin of the library starts, while `onDecision` hears every decision either way. Alone in its
 * file, so that no other test's plugin has started in this module registry.
 */

test('transformer alone keeps nothing per request; once a plugin starts, each request is kept', async () => {
  const heard: DecisionEvent[] = [];
  const directive = rateLimitDirective<{ team: string }>({
    store: createMemoryStore(),
    identify: (context) => context.team,
    onDecision: (event) => heard.push(event),
  });
  const schema = directive.transformer(
    makeExecutableSchema({
      typeDefs: [
        directive.typeDefs,
        'type Query { flag: Boolean @rateLimit(action: "flag", window: 60, limit: 5) }',
      ],
      resolvers: { Query: { flag: () => true } },
    }),
  );
  const run = async (contextValue: { team: string }) => {
    const result = await graphql({ schema, source: '{ flag }', contextValue });
    expect(result).toEqual({ data: { flag: true } });
  };

  const alone = { team: 'red' };
  await run(alone);
  expect(heard).toHaveLength(1);
  expect(decisionsOf(alone)).toEqual([]);

  await directive.plugin.serverWillStart({ schema });
  const plugged = { team: 'red' };
  await run(plugged);
  expect(heard).toHaveLength(2);
  expect(decisionsOf(plugged)).toEqual([heard[1]]);
});
