import { randomUUID } from 'node:crypto';

import { composeServices } from '@apollo/composition';
import { ApolloServer } from '@apollo/server';
import { buildSubgraphSchema } from '@apollo/subgraph';
import { parse, printSchema } from 'graphql';

import { RateLimitConfigError, rateLimitDirective } from '../../src';
import { releaseTogether } from '../support/barrier';
import { closeClients, connectRedis, uniquePrefix } from '../support/redis';
import { openedRedisStore } from '../support/stores';

/*
 * An Apollo Federation 2 subgraph built by `buildSubgraphSchema` and passed through
 * `transformer`: a limit on a root field, and one on a field of an entity that the router
 * reaches through `_entities`. Operations run against the subgraph's Apollo Server as the
 * router would send them.
 */

const SUBGRAPH = `
  extend schema
    @link(url: "https://specs.apollo.dev/federation/v2.3", import: ["@key", "@inaccessible"])

  extend enum RateLimitAlgorithm @inaccessible

  type Query {
    challenge(id: ID!): Challenge @rateLimit(action: "lookup", window: 60, limit: 3)
  }
  type Challenge @key(fields: "id") {
    id: ID!
    hint: String @rateLimit(action: "hint", window: 60, limit: 2)
  }`;

interface ChallengeRef {
  id: string;
}
const resolvers = {
  Query: { challenge: (_: unknown, { id }: ChallengeRef) => ({ id }) },
  Challenge: {
    __resolveReference: ({ id }: ChallengeRef) => ({ id }),
    hint: ({ id }: ChallengeRef) => `hint for ${id}`,
  },
};

const ENTITIES = `query ($representations: [_Any!]!) {
  _entities(representations: $representations) { ... on Challenge { id hint } }
}`;
const refs = (...ids: string[]) => ids.map((id) => ({ __typename: 'Challenge', id }));

let server: ApolloServer | undefined;
let subgraphSdl: string;

beforeAll(async () => {
  const store = await openedRedisStore({ client: await connectRedis(), prefix: uniquePrefix() });
  const { typeDefs, transformer, plugin } = rateLimitDirective({ store });
  const schema = transformer(
    buildSubgraphSchema({ typeDefs: parse(`${typeDefs}\n${SUBGRAPH}`), resolvers }),
  );
  const started = new ApolloServer({ schema, plugins: [plugin] });
  await started.start();
  server = started;
  const { body } = await started.executeOperation({ query: '{ _service { sdl } }' });
  subgraphSdl =
    (body.kind === 'single' && (body.singleResult.data?._service as { sdl: string }).sdl) || '';
});

afterAll(async () => {
  try {
    await server?.stop();
  } finally {
    await closeClients();
  }
});

async function run(query: string, team: string, variables?: Record<string, unknown>) {
  if (!server) throw new Error('the subgraph did not start');
  const response = await server.executeOperation(
    { query, variables },
    { contextValue: { team: { id: team } } },
  );
  if (response.body.kind !== 'single') throw new Error('expected a single result');
  return { http: response.http, result: response.body.singleResult };
}

const codesOf = (result: { errors?: readonly { extensions?: Record<string, unknown> }[] }) =>
  (result.errors ?? []).map((e) => e.extensions?.code);

test('a root field of the subgraph: three pass, the fourth is RATE_LIMITED, with headers', async () => {
  const team = randomUUID();
  const results = [];
  for (let i = 0; i < 4; i++) results.push(await run('{ challenge(id: "c1") { id } }', team));
  expect(results.map((r) => r.result.data?.challenge ?? codesOf(r.result)[0])).toEqual([
    { id: 'c1' },
    { id: 'c1' },
    { id: 'c1' },
    'RATE_LIMITED',
  ]);
  const blocked = results[3];
  expect(blocked?.http.headers.get('ratelimit-policy')).toBe('"lookup";q=3;w=60');
  expect(blocked?.http.headers.get('retry-after')).toMatch(/^\d+$/);
});

test('an entity field reached through _entities is limited per hit, as the router sends it', async () => {
  const team = randomUUID();
  const { result } = await run(ENTITIES, team, { representations: refs('a', 'b', 'c') });
  expect(result.data?._entities).toEqual([
    { id: 'a', hint: 'hint for a' },
    { id: 'b', hint: 'hint for b' },
    { id: 'c', hint: null },
  ]);
  expect(result.errors).toHaveLength(1);
  expect(result.errors?.[0]?.path).toEqual(['_entities', 2, 'hint']);
  expect(result.errors?.[0]?.extensions).toMatchObject({
    code: 'RATE_LIMITED',
    action: 'hint',
    limit: 2,
  });
  // the same counter as the entity field reached from the root field
  const again = await run('{ challenge(id: "d") { hint } }', team);
  expect(codesOf(again.result)).toEqual(['RATE_LIMITED']);
});

test('simultaneous _entities operations: exactly the limit of hints pass', async () => {
  const team = randomUUID();
  const N = 12;
  const results = await releaseTogether(
    N,
    async (i) => async () => run(ENTITIES, team, { representations: refs(`e${i}`) }),
  );
  const hints = results.map(
    (r) => (r.result.data?._entities as { hint: string | null }[] | undefined)?.[0]?.hint,
  );
  expect(hints.filter((h) => typeof h === 'string')).toHaveLength(2);
  expect(results.flatMap((r) => codesOf(r.result))).toEqual(
    Array.from({ length: N - 2 }, () => 'RATE_LIMITED'),
  );
});

test('composition accepts the subgraph; the directive stays subgraph-local', () => {
  expect(subgraphSdl).toContain('hint: String @rateLimit(action: "hint", window: 60, limit: 2)');
  const teams = `extend schema @link(url: "https://specs.apollo.dev/federation/v2.3", import: ["@key"])
    type Query { teams: [String] }`;
  const composed = composeServices([
    { name: 'challenges', typeDefs: parse(subgraphSdl), url: 'http://challenges' },
    { name: 'teams', typeDefs: parse(teams), url: 'http://teams' },
  ]);
  expect(composed.errors).toBeUndefined();
  expect(composed.supergraphSdl).not.toContain('@rateLimit');
  // @inaccessible keeps the directive's enum out of the schema clients see through the router
  if (!composed.schema) throw new Error('composition gave no schema');
  const api = printSchema(composed.schema.toAPISchema().toGraphQLJSSchema());
  expect(api).toContain('type Challenge');
  expect(api).not.toContain('RateLimitAlgorithm');
});

test('the plugin refuses a subgraph that skipped the transformer', async () => {
  const { typeDefs, plugin } = rateLimitDirective({
    store: await openedRedisStore({ client: await connectRedis(), prefix: uniquePrefix() }),
  });
  const schema = buildSubgraphSchema({ typeDefs: parse(`${typeDefs}\n${SUBGRAPH}`), resolvers });
  const untransformed = new ApolloServer({ schema, plugins: [plugin] });
  await expect(untransformed.start()).rejects.toThrow(RateLimitConfigError);
});
