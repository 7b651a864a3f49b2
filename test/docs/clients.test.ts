import { randomUUID } from 'node:crypto';

import {
  ApolloClient,
  ApolloLink,
  CombinedGraphQLErrors,
  gql,
  HttpLink,
  InMemoryCache,
} from '@apollo/client';
import { ApolloServer } from '@apollo/server';
import { startStandaloneServer } from '@apollo/server/standalone';
import { makeExecutableSchema } from '@graphql-tools/schema';
import { tap } from 'rxjs';

import { createRedisStore, rateLimitDirective, type DecisionEvent } from '../../src';
import { recipeProject, type RecipeProject } from '../support/recipes';
import { closeClients, connectRedis, uniquePrefix } from '../support/redis';

// graphql-request 7 publishes ES module types only; jest loads its CommonJS build
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { ClientError, GraphQLClient } = require('graphql-request') as typeof import(
  'graphql-request',
  { with: { 'resolution-mode': 'import' } }
);

/*
 * What real clients surface when a field is RATE_LIMITED, against an Apollo Server over HTTP,
 * with and without `status429`; and the README's client recipes, run as pasted, retrying after
 * the time the server names.
 */

const SDL = `type Query { ping: Boolean }
  type Mutation {
    hint: String @rateLimit(action: "hint", window: 60, limit: 1)
    submitFlag(flag: String!): Boolean! @rateLimit(action: "submitFlag", window: 1, limit: 1)
  }`;
const resolvers = { Mutation: { hint: () => 'look closer', submitFlag: () => false } };

interface Started {
  readonly url: string;
  readonly server: ApolloServer;
  readonly decisions: DecisionEvent[];
}

async function startServer(status429: boolean): Promise<Started> {
  const decisions: DecisionEvent[] = [];
  const { typeDefs, transformer, plugin } = rateLimitDirective({
    store: createRedisStore({ client: await connectRedis(), prefix: uniquePrefix() }),
    status429,
    onDecision: (event) => decisions.push(event),
  });
  const schema = transformer(makeExecutableSchema({ typeDefs: [typeDefs, SDL], resolvers }));
  const server = new ApolloServer({ schema, plugins: [plugin] });
  const { url } = await startStandaloneServer(server, {
    listen: { port: 0, host: '127.0.0.1' },
    context: async ({ req }) => ({
      team: { id: req.headers.authorization?.replace(/^Bearer /, '') },
    }),
  });
  return { url, server, decisions };
}

const servers: Record<'plain' | 'status429', Started | undefined> = {
  plain: undefined,
  status429: undefined,
};
let recipes: RecipeProject;

beforeAll(async () => {
  [servers.plain, servers.status429] = await Promise.all([startServer(false), startServer(true)]);
  recipes = recipeProject();
});
afterAll(async () => {
  for (const started of Object.values(servers)) await started?.server.stop();
  recipes?.remove();
  await closeClients();
});

const HINT = 'mutation { hint }';

/** An Apollo Client 4 on Node's fetch, and what the last HTTP response it got said. */
function apolloClient(url: string, team: string) {
  const seen: { status?: number; retryAfter?: string | null } = {};
  // HttpLink leaves the Fetch API response in the operation's context
  const capture = new ApolloLink((operation, forward) =>
    forward(operation).pipe(
      tap(() => {
        const response = operation.getContext().response as Response;
        seen.status = response.status;
        seen.retryAfter = response.headers.get('retry-after');
      }),
    ),
  );
  const client = new ApolloClient({
    link: ApolloLink.from([
      capture,
      new HttpLink({ uri: url, headers: { authorization: `Bearer ${team}` } }),
    ]),
    cache: new InMemoryCache(),
  });
  return { client, seen };
}

describe.each([
  ['plain', 200],
  ['status429', 429],
] as const)('against a server with %s', (which, blockedStatus) => {
  const started = (): Started => {
    const s = servers[which];
    if (!s) throw new Error('the server did not start');
    return s;
  };

  test('Apollo Client 4 rejects with CombinedGraphQLErrors carrying code and retryAfter', async () => {
    const { client, seen } = apolloClient(started().url, randomUUID());
    expect((await client.mutate({ mutation: gql(HINT) })).data).toEqual({ hint: 'look closer' });
    const error: unknown = await client.mutate({ mutation: gql(HINT) }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(CombinedGraphQLErrors.is(error)).toBe(true);
    const blocked = (error as CombinedGraphQLErrors).errors[0];
    expect(blocked?.extensions).toMatchObject({ code: 'RATE_LIMITED', action: 'hint', limit: 1 });
    const retryAfter = blocked?.extensions?.retryAfter;
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    // the headers and the status are on the response a link can read
    expect(seen).toEqual({ status: blockedStatus, retryAfter: String(retryAfter) });
  });

  test("Apollo Client 4 with errorPolicy 'all' resolves with the data and the error", async () => {
    const { client } = apolloClient(started().url, randomUUID());
    await client.mutate({ mutation: gql(HINT) });
    const result = await client.mutate({ mutation: gql(HINT), errorPolicy: 'all' });
    expect(result.data).toEqual({ hint: null });
    expect(CombinedGraphQLErrors.is(result.error)).toBe(true);
  });

  test('graphql-request 7 rejects with ClientError: status, headers and errors on its response', async () => {
    const client = new GraphQLClient(started().url, {
      headers: { authorization: `Bearer ${randomUUID()}` },
    });
    await client.request(HINT);
    const error: unknown = await client.request(HINT).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ClientError);
    const { response } = error as InstanceType<typeof ClientError>;
    expect(response.status).toBe(blockedStatus);
    const retryAfter = response.errors?.[0]?.extensions?.retryAfter;
    expect(response.errors?.[0]?.extensions?.code).toBe('RATE_LIMITED');
    expect(response.headers.get('retry-after')).toBe(String(retryAfter));
  });

  test("graphql-request 7 with errorPolicy 'all' resolves on a 200, and still rejects a 429", async () => {
    const client = new GraphQLClient(started().url, {
      headers: { authorization: `Bearer ${randomUUID()}` },
      errorPolicy: 'all',
    });
    await client.rawRequest(HINT);
    const outcome = await client.rawRequest(HINT).then(
      (result) => ({ resolved: result }),
      (error: unknown) => ({ rejected: error }),
    );
    if (blockedStatus === 200) {
      expect(outcome).toMatchObject({
        resolved: {
          status: 200,
          data: { hint: null },
          errors: [{ extensions: { code: 'RATE_LIMITED' } }],
        },
      });
    } else {
      expect(outcome).toEqual({ rejected: expect.any(ClientError) });
      expect(
        (outcome as { rejected: InstanceType<typeof ClientError> }).rejected.response,
      ).toMatchObject({
        status: 429,
        errors: [{ extensions: { code: 'RATE_LIMITED' } }],
      });
    }
  });

  test('the README recipes wait out RATE_LIMITED and send again', async () => {
    const runs = ['apollo-client.mts', 'graphql-request.mts'].map(async (file) => {
      const team = randomUUID();
      const child = recipes.start(file, { GRAPHQL_URL: started().url, TEAM: team });
      const { code } = await child.exited;
      // the second submission was blocked once (the window is 1 s), then sent again
      const decisions = started().decisions.filter((d) => d.identity === team);
      return { file, code, output: child.stdout(), allowed: decisions.map((d) => d.allowed) };
    });
    for (const run of await Promise.all(runs)) {
      expect(run).toEqual({
        file: run.file,
        code: 0,
        output: '{"submitFlag":false}\n{"submitFlag":false}\n',
        allowed: [true, false, true],
      });
    }
  });
});
