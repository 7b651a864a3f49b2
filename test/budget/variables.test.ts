import { randomUUID } from 'node:crypto';

import { makeExecutableSchema } from '@graphql-tools/schema';
import { getVariableValues, parse, type OperationDefinitionNode } from 'graphql';
import { fetch } from 'undici';

import { serveBudget, type BudgetServer, type ServerKind } from '../support/budget-servers';
import { stopAll } from '../support/processes';
import { closeClients, connectRedis, redisUrl, uniquePrefix } from '../support/redis';
import { startBudgetServer, type ServerProcess } from '../support/servers';
import { openedRedisStore } from '../support/stores';

/*
 * A budget never admits an operation uncharged because it expects the host to refuse it later:
 * variables that graphql-js does not coerce (`[]` for an input object), which graphql-jit
 * accepts, are refused by the budget itself with GraphQL's own error, and nothing runs. The same
 * document is sent 20 times, so that Mercurius with `jit: 1` compiles it at the second request
 * (a path that skips Mercurius' own check of variables) and envelop's jit plugin runs it on Yoga.
 */

afterAll(async () => {
  await stopAll();
  await closeClients();
});

const BUDGET = { limit: 100, window: 60 };
/** Priced 91; `{ w: [] }` does not coerce, `{ w: {} }` does. */
const QUERY = 'query ($w: Where!) { filtered(first: 91, where: $w) { id } }';

/** The error graphql-js gives for `variables` of {@link QUERY}, in the shape a response carries. */
function graphqlErrors(variables: Record<string, unknown>) {
  const sdl = 'input Where { min: Int } type Query { filtered(first: Int!, where: Where!): [ID] }';
  const schema = makeExecutableSchema({ typeDefs: sdl });
  const operation = parse(QUERY).definitions[0] as OperationDefinitionNode;
  const coerced = getVariableValues(schema, operation.variableDefinitions ?? [], variables);
  return (coerced.errors ?? []).map((e) => {
    const { message, locations } = e.toJSON();
    return { message, locations };
  });
}

const expected = graphqlErrors({ w: [] });

test('graphql-js refuses `[]` for an input object (what the hosts are checked against)', () => {
  expect(expected).toEqual([
    {
      message: 'Variable "$w" got invalid value []; Expected type "Where" to be an object.',
      locations: [{ line: 1, column: 8 }],
    },
  ]);
});

describe.each<[ServerKind, boolean]>([
  ['apollo', false],
  ['yoga', false],
  ['yoga', true],
])('%s (jit: %s)', (kind, jit) => {
  let server: BudgetServer | undefined;
  afterEach(() => server?.stop());

  test('20 operations priced 91 with variables that do not coerce: each refused with GraphQL’s error, none ran, none charged', async () => {
    const store = await openedRedisStore({ client: await connectRedis(), prefix: uniquePrefix() });
    const s = (server = await serveBudget(kind, { store, budget: BUDGET }, { jit }));
    const team = `team-${randomUUID()}`;
    for (let i = 0; i < 20; i++) {
      const r = await s.run(QUERY, team, { w: [] });
      expect(r.body.data ?? null).toBeNull();
      expect(r.body.errors).toMatchObject(expected);
      expect(r.body.extensions?.cost).toBeUndefined();
      // as each answers variables it refuses itself (graphql-tools' executor: http.status 400)
      expect(r.status).toBe(400);
      expect(r.body.errors?.[0]?.extensions?.http).toBeUndefined();
    }
    expect(s.runs.filtered).toBe(0);
    expect((await s.peek({ identity: team, action: 'budget' }))[0]?.remaining).toBe(100);
    // the budget is whole: one operation of 91 fits, a second does not
    expect((await s.run(QUERY, team, { w: {} })).body.data?.filtered).toHaveLength(91);
    expect((await s.run(QUERY, team, { w: {} })).body.errors?.[0]?.extensions?.code).toBe(
      'RATE_LIMITED',
    );
    expect(s.runs.filtered).toBe(1);
  });
});

describe.each([
  ['mercurius', '0'],
  ['mercurius', '1'],
  ['yoga', '1'],
])('%s process (jit: %s)', (host, jit) => {
  let server: ServerProcess;
  beforeAll(async () => {
    const env = { REDIS_URL: redisUrl(), RATE_LIMIT_PREFIX: uniquePrefix(), HOST: host, JIT: jit };
    server = await startBudgetServer(BUDGET, env);
  }, 30_000);
  afterAll(() => server?.stop());

  const post = async (query: string, team: string, variables?: Record<string, unknown>) => {
    const response = await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-team': team },
      body: JSON.stringify({ query, variables }),
      signal: AbortSignal.timeout(10_000),
    });
    const body = (await response.json()) as {
      data?: { filtered?: unknown[]; runs?: number } | null;
      errors?: { message: string; extensions?: Record<string, unknown> }[];
      extensions?: Record<string, unknown>;
    };
    return { status: response.status, body };
  };

  test('the same document 20 times with variables that do not coerce: every answer is GraphQL’s error, nothing ran, nothing charged', async () => {
    const team = `team-${randomUUID()}`;
    const answers = [];
    for (let i = 0; i < 20; i++) answers.push(await post(QUERY, team, { w: [] }));
    const first = answers[0];
    for (const r of answers) {
      expect(r.body.data ?? null).toBeNull();
      expect(r.body.errors).toMatchObject(expected);
      // the compiled path answers as the host's own check (the first request) does
      expect(r).toEqual(first);
    }
    expect((await post('{ runs }', team)).body.data?.runs).toBe(0);
    expect((await post(QUERY, team, { w: {} })).body.data?.filtered).toHaveLength(91);
    const spent = await post(QUERY, team, { w: {} });
    expect(spent.body.errors?.[0]?.extensions?.code).toBe('RATE_LIMITED');
    expect((await post('{ runs }', team)).body.data?.runs).toBe(1);
  });
});
