import { randomUUID } from 'node:crypto';

import { composeServices } from '@apollo/composition';
import { ApolloGateway } from '@apollo/gateway';
import { ApolloServer } from '@apollo/server';
import { parse } from 'graphql';

import { rateLimitDirective } from '../../src';
import { WARNING_CODES } from '../../src';
import { closeClients, connectRedis, uniquePrefix } from '../support/redis';
import { openedRedisStore } from '../support/stores';

/*
 * @apollo/gateway serves an API schema without @cost and @listSize, however the subgraphs
 * declared them: Apollo Server's `plugin` prices the gateway's operations from the supergraph it
 * loaded, which keeps them (federation v2.9). The subgraph is never reached: an operation the
 * budget admits fails at the fetch, and its data nulled, its estimate stays taken.
 */

afterAll(closeClients);

const subgraph = (version: string, imports: string) => `
  extend schema @link(url: "https://specs.apollo.dev/federation/${version}", import: [${imports}])
  type Query {
    challenges(first: Int = 10): [Challenge!]! @listSize(slicingArguments: ["first"])
  }
  type Challenge @key(fields: "id") {
    id: ID!
    hint: String @cost(weight: 5)
  }`;

function supergraph(version: string): string {
  const sdl =
    version === 'v2.9'
      ? subgraph(version, '"@key", "@cost", "@listSize"')
      : `${subgraph(version, '"@key"')}
        directive @cost(weight: Int!) on FIELD_DEFINITION
        directive @listSize(slicingArguments: [String!]) on FIELD_DEFINITION`;
  const composed = composeServices([
    // nothing listens there: the fetch fails at once
    { name: 'challenges', typeDefs: parse(sdl), url: 'http://127.0.0.1:1/graphql' },
  ]);
  if (!composed.supergraphSdl) throw new Error(JSON.stringify(composed.errors));
  return composed.supergraphSdl;
}

let warn: jest.SpyInstance;
beforeEach(() => {
  warn = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
});
afterEach(() => warn.mockRestore());
const unpriced = () =>
  warn.mock.calls.filter(
    ([, options]) =>
      (options as { code?: string } | undefined)?.code === WARNING_CODES.UNPRICED_SCHEMA,
  );

async function gatewayServer(version: string) {
  const store = await openedRedisStore({ client: await connectRedis(), prefix: uniquePrefix() });
  const directive = rateLimitDirective<{ team?: string }>({
    store,
    identify: (context) => context.team,
    budget: { limit: 1_000, window: 60 },
  });
  const server = new ApolloServer<{ team?: string }>({
    gateway: new ApolloGateway({ supergraphSdl: supergraph(version) }),
    plugins: [directive.plugin],
  });
  await server.start();
  return server;
}

test('federation v2.9: challenges(first: 400) is priced 400 from the supergraph, 2 of 10 pass a budget of 1000', async () => {
  const server = await gatewayServer('v2.9');
  try {
    const team = `team-${randomUUID()}`;
    const answers = [];
    for (let i = 0; i < 10; i++) {
      const r = await server.executeOperation(
        { query: '{ challenges(first: 400) { id } }' },
        { contextValue: { team } },
      );
      if (r.body.kind !== 'single') throw new Error('expected a single result');
      answers.push(r.body.singleResult);
    }
    expect(answers[0]?.extensions?.cost).toMatchObject({ requestedQueryCost: 400 });
    const codes = answers.map((a) => a.errors?.[0]?.extensions?.code);
    expect(codes.filter((c) => c === 'RATE_LIMITED')).toHaveLength(8);
    expect(unpriced()).toHaveLength(0);
  } finally {
    await server.stop();
  }
});

test('federation v2.3 (composition dropped them): the start warning says so, once', async () => {
  const server = await gatewayServer('v2.3');
  await server.stop();
  expect(unpriced()).toHaveLength(1);
  expect(String(unpriced()[0]?.[0])).toMatch(/its supergraph too.*federation v2\.9/);
});
