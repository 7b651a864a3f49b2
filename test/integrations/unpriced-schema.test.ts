import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { composeServices } from '@apollo/composition';
import { ApolloServer } from '@apollo/server';
import { buildSubgraphSchema } from '@apollo/subgraph';
import { createGatewayRuntime } from '@graphql-hive/gateway-runtime';
import { parse } from 'graphql';

import { createMemoryStore, rateLimitDirective, WARNING_CODES } from '../../src';

/*
 * A budget priced from a schema that carries no @cost and no @listSize prices every list at its
 * default size. Behind a gateway that is the sign that composition dropped them (a subgraph's
 * federation v2.3 @link), so the plugins warn at start, once per schema; a supergraph composed
 * from a v2.9 subgraph keeps them and gets no warning.
 */

const PAGE = readFileSync(join(__dirname, '..', '..', 'docs', 'gateways.md'), 'utf8');

const subgraph = (version: string, imports: string) => `
  extend schema @link(url: "https://specs.apollo.dev/federation/${version}", import: [${imports}])
  type Query {
    challenges(first: Int = 10): [Challenge!]! @listSize(slicingArguments: ["first"])
  }
  type Challenge @key(fields: "id") {
    id: ID!
    hint: String @cost(weight: 5)
  }`;

/** A supergraph composed from one subgraph whose `@link` is `version`. */
function supergraph(version: string): string {
  // v2.3 knows no @cost or @listSize: they are declared in the subgraph, and composition drops them
  const sdl =
    version === 'v2.9'
      ? subgraph(version, '"@key", "@cost", "@listSize"')
      : `${subgraph(version, '"@key"')}
        directive @cost(weight: Int!) on FIELD_DEFINITION
        directive @listSize(slicingArguments: [String!]) on FIELD_DEFINITION`;
  const composed = composeServices([
    { name: 'challenges', typeDefs: parse(sdl), url: 'http://challenges.invalid/graphql' },
  ]);
  if (!composed.supergraphSdl) throw new Error(JSON.stringify(composed.errors));
  return composed.supergraphSdl;
}

const budgeted = () =>
  rateLimitDirective({
    store: createMemoryStore(),
    identify: () => 'team',
    budget: { limit: 100, window: 60 },
  });

let warn: jest.SpyInstance;
beforeEach(() => {
  warn = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
});
afterEach(() => warn.mockRestore());

const unpricedWarnings = () =>
  warn.mock.calls.filter(
    ([, options]) =>
      (options as { code?: string } | undefined)?.code === WARNING_CODES.UNPRICED_SCHEMA,
  );

describe.each([
  ['v2.3', 1],
  ['v2.9', 0],
])('Hive Gateway on a supergraph composed from a federation %s subgraph', (version, warnings) => {
  test(`envelopPlugin warns ${warnings} time(s), however many operations run`, async () => {
    const { envelopPlugin } = budgeted();
    const gateway = createGatewayRuntime({
      supergraph: supergraph(version),
      plugins: () => [envelopPlugin],
      logging: false,
    });
    try {
      for (let i = 0; i < 3; i++) {
        const response = await gateway.fetch('http://gateway/graphql', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ query: '{ __typename }' }),
        });
        expect(await response.json()).toMatchObject({ data: { __typename: 'Query' } });
      }
    } finally {
      await gateway.dispose();
    }
    expect(unpricedWarnings()).toHaveLength(warnings);
    if (warnings) {
      const message = String(unpricedWarnings()[0]?.[0]);
      expect(message).toMatch(/no @cost and no @listSize.*v2\.9/);
      // docs/gateways.md shows it as it is written
      expect(PAGE.replace(/\s+/g, ' ')).toContain(`Warning: ${message}`);
    }
  });
});

// the v2.3 subgraph with its cost directives taken out: what a schema priced by nothing looks like
const UNPRICED = subgraph('v2.3', '"@key"').replace(/ @(cost|listSize)\(.*?\)$/gm, '');

describe("Apollo Server's plugin", () => {
  test.each([
    ['no @cost or @listSize', 1, UNPRICED],
    [
      '@cost and @listSize from federation v2.9',
      0,
      subgraph('v2.9', '"@key", "@cost", "@listSize"'),
    ],
  ])('on a subgraph with %s warns %i time(s) at start', async (_, warnings, typeDefs) => {
    const { plugin } = budgeted();
    const schema = buildSubgraphSchema({ typeDefs: parse(typeDefs) });
    const server = new ApolloServer({ schema, plugins: [plugin] });
    await server.start();
    await server.stop();
    expect(unpricedWarnings()).toHaveLength(warnings);
  });

  test('without a budget, nothing is said', async () => {
    const { plugin } = rateLimitDirective({ store: createMemoryStore(), identify: () => 'team' });
    const server = new ApolloServer({
      schema: buildSubgraphSchema({ typeDefs: parse(UNPRICED) }),
      plugins: [plugin],
    });
    await server.start();
    await server.stop();
    expect(unpricedWarnings()).toHaveLength(0);
  });
});
