import { ApolloServer } from '@apollo/server';
import { makeExecutableSchema } from '@graphql-tools/schema';

import { createMemoryStore, rateLimitDirective } from '../../src';
import { mergeRateLimitHeaders } from '../../src/plugins/merge-headers';

/*
 * A gateway's response carries its subgraphs' rate-limit headers (appended one after the other)
 * before its own plugin writes the budget's: the plugin merges them instead of overwriting.
 */

const headers = (values: Record<string, string>) => ({ get: (name: string) => values[name] });

test('nothing on either side writes nothing', () => {
  expect(mergeRateLimitHeaders(headers({}), [])).toEqual([]);
});

test("two subgraphs' headers and the budget's: every policy once, the fewest left, the longest wait", () => {
  const subgraphs = headers({
    'ratelimit-policy': '"submit";q=3;w=60, "hint";q=2;w=60, "submit";q=3;w=60',
    ratelimit: '"submit";r=0;t=42, "hint";r=0;t=50',
    'retry-after': '42, 50',
  });
  const budget = [
    ['ratelimit-policy', '"budget";q=1000;w=60'],
    ['ratelimit', '"budget";r=0;t=12'],
    ['retry-after', '12'],
  ] as const;
  expect(mergeRateLimitHeaders(subgraphs, budget)).toEqual([
    ['ratelimit-policy', '"submit";q=3;w=60, "hint";q=2;w=60, "budget";q=1000;w=60'],
    ['ratelimit', '"hint";r=0;t=50'],
    ['retry-after', '50'],
  ]);
});

test("the budget's points count as operations like this one, a subgraph's units as hits", () => {
  const subgraph = headers({ ratelimit: '"submit";r=2;t=60' });
  const budget = [['ratelimit', '"budget";r=150;t=12']] as const;
  // 150 points left after an operation estimated at 200: not one more such operation
  expect(mergeRateLimitHeaders(subgraph, budget, 0)).toContainEqual([
    'ratelimit',
    '"budget";r=150;t=12',
  ]);
  // 150 points left after an operation estimated at 10: 15 more, so the subgraph's 2 are fewer
  expect(mergeRateLimitHeaders(subgraph, budget, 15)).toContainEqual([
    'ratelimit',
    '"submit";r=2;t=60',
  ]);
});

test('a policy name with a comma or a quote in it stays one policy', () => {
  const subgraph = headers({
    'ratelimit-policy': '"a,b";q=3;w=60',
    ratelimit: '"say \\"hi\\", then";r=1;t=9',
  });
  expect(mergeRateLimitHeaders(subgraph, [['ratelimit', '"budget";r=5;t=60']])).toEqual([
    ['ratelimit-policy', '"a,b";q=3;w=60'],
    ['ratelimit', '"say \\"hi\\", then";r=1;t=9'],
  ]);
});

test("Apollo Server's plugin merges headers another plugin set before it", async () => {
  const { typeDefs, transformer, plugin } = rateLimitDirective({
    store: createMemoryStore(),
    identify: () => 'team',
  });
  const schema = transformer(
    makeExecutableSchema({
      typeDefs: [
        typeDefs,
        'type Query { hint: String @rateLimit(action: "hint", window: 60, limit: 5) }',
      ],
      resolvers: { Query: { hint: () => 'look closer' } },
    }),
  );
  // what a gateway's data source would copy from a subgraph's response
  const subgraph = {
    async requestDidStart() {
      return {
        async willSendResponse({
          response,
        }: {
          response: { http: { headers: Map<string, string> } };
        }) {
          response.http.headers.set('ratelimit-policy', '"submit";q=3;w=60');
          response.http.headers.set('ratelimit', '"submit";r=0;t=30');
          response.http.headers.set('retry-after', '30');
        },
      };
    },
  };
  const server = new ApolloServer({ schema, plugins: [subgraph, plugin] });
  await server.start();
  try {
    const { http } = await server.executeOperation({ query: '{ hint }' });
    expect(Object.fromEntries(http.headers)).toMatchObject({
      'ratelimit-policy': '"submit";q=3;w=60, "hint";q=5;w=60',
      ratelimit: '"submit";r=0;t=30',
      'retry-after': '30',
    });
  } finally {
    await server.stop();
  }
});
