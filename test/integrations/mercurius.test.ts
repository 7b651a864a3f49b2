import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { makeExecutableSchema } from '@graphql-tools/schema';
import Fastify, { type FastifyInstance } from 'fastify';
import { extendSchema, parse } from 'graphql';
import mercurius from 'mercurius';

import { createRedisStore, rateLimitDirective } from '../../src';
import { mercuriusRateLimit } from '../../src/mercurius';
import { releaseTogether } from '../support/barrier';
import { errorCodes, httpClient, postGraphQL, type GraphQLResponse } from '../support/http';
import { within, type Child } from '../support/processes';
import { recipeProject, type RecipeProject } from '../support/recipes';
import { closeClients, connectRedis, redisUrl, uniquePrefix } from '../support/redis';

/*
 * docs/mercurius.md's server, examples/mercurius.ts, run as a user runs it (its own process,
 * the package imported by name) against Redis, with graphql-jit off and on; then the plugin's
 * start-up refusals and its 429, in process (with `cache: false`: Mercurius loads its cache
 * with a dynamic import, which Jest's module system does not run).
 */

const repo = join(__dirname, '..', '..');
const SUBMIT = 'mutation { submitFlag(flag: "CTF{no}") }';

test('docs/mercurius.md shows examples/mercurius.ts byte for byte', () => {
  const page = readFileSync(join(repo, 'docs', 'mercurius.md'), 'utf8');
  const source = readFileSync(join(repo, 'examples', 'mercurius.ts'), 'utf8');
  expect(page).toContain(`\`\`\`ts\n${source}\`\`\`\n`);
});

/** What each response was: its one field's value, else its first error code. */
const outcomes = (responses: readonly GraphQLResponse[], field: string): unknown[] =>
  responses.map((r) => r.body.data?.[field] ?? errorCodes(r)[0]);

describe.each(['0', '1'])('examples/mercurius.ts as pasted, JIT=%s', (jit) => {
  let project: RecipeProject;
  let server: Child;
  let url: string;

  beforeAll(async () => {
    project = recipeProject();
    server = project.start('mercurius.ts', { REDIS_URL: redisUrl(), PORT: '0', JIT: jit });
    [, url = ''] = await server.waitForOutput(/Ready at (\S+)/);
    // a first hit loads the scripts into Redis (and, with jit, compiles): not what is measured
    await postGraphQL(url, SUBMIT, `warm-${randomUUID()}`);
  });
  afterAll(async () => {
    await server?.stop();
    project?.remove();
  });

  test('20 simultaneous submissions of one team: exactly 3 pass, the rest RATE_LIMITED', async () => {
    const team = `team-${randomUUID()}`;
    const clients = Array.from({ length: 20 }, () => httpClient());
    const responses = await releaseTogether(20, async (i) => {
      const client = clients[i] ?? httpClient();
      return () => client.post(url, SUBMIT, team);
    });
    await Promise.all(clients.map((c) => c.close()));
    const results = outcomes(responses, 'submitFlag');
    expect(results.filter((r) => r === false)).toHaveLength(3);
    expect(results.filter((r) => r !== false)).toEqual(Array<string>(17).fill('RATE_LIMITED'));
    const blocked = responses.find((r) => errorCodes(r)[0] === 'RATE_LIMITED');
    expect(blocked?.headers.get('ratelimit-policy')).toBe('"submit";q=3;w=60');
    expect(blocked?.headers.get('retry-after')).toMatch(/^\d+$/);
  });

  test('the budget: 2 of 5 operations priced 40 fit 100 points', async () => {
    const team = `team-${randomUUID()}`;
    const responses = [];
    for (let i = 0; i < 5; i++) responses.push(await postGraphQL(url, '{ hint }', team));
    expect(outcomes(responses, 'hint')).toEqual([
      'Look closer',
      'Look closer',
      'RATE_LIMITED',
      'RATE_LIMITED',
      'RATE_LIMITED',
    ]);
    expect(responses[0]?.body.extensions?.cost).toMatchObject({ requestedQueryCost: 40 });
    expect(responses[2]?.headers.get('ratelimit-policy')).toBe('"budget";q=100;w=60');
  });

  test('the budget prices the operation the request names', async () => {
    const document = 'query Cheap { __typename } query Dear { hint }';
    const priced = [];
    for (const operationName of ['Dear', 'Cheap']) {
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${randomUUID()}` },
        body: JSON.stringify({ query: document, operationName }),
      });
      const body = (await response.json()) as GraphQLResponse['body'];
      priced.push((body.extensions?.cost as { requestedQueryCost?: number })?.requestedQueryCost);
    }
    expect(priced).toEqual([40, 0]);
  });

  // last: it ends the server
  test('SIGTERM closes the Redis client and the process exits 0', async () => {
    server.process.kill('SIGTERM');
    expect(await within(server.exited, 10_000, 'the server to exit')).toEqual({
      code: 0,
      signal: null,
    });
  });
});

describe('the plugin in process', () => {
  const apps: FastifyInstance[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
  });
  afterAll(closeClients);

  const sdl = `type Query { ok: Boolean }
    type Mutation { submitFlag: Boolean @rateLimit(action: "submit", window: 60, limit: 3) }`;
  const resolvers = { Mutation: { submitFlag: () => false } };

  async function directiveFor(status429 = false) {
    const client = await connectRedis();
    return rateLimitDirective<{ reply: { request: { headers: { authorization?: string } } } }>({
      store: createRedisStore({ client, prefix: uniquePrefix() }),
      identify: ({ reply }) => reply.request.headers.authorization,
      status429,
      budget: { limit: 1000, window: 60 },
    });
  }

  test('registered before mercurius, it fails at start', async () => {
    const directive = await directiveFor();
    const app = Fastify();
    apps.push(app);
    void app.register(mercuriusRateLimit, { directive });
    await expect(app.ready()).rejects.toThrow('register mercurius before this plugin');
  });

  test('a schema transformed in part fails at start, naming the field missed', async () => {
    const directive = await directiveFor();
    const transformed = directive.transformer(
      makeExecutableSchema({ typeDefs: [directive.typeDefs, sdl], resolvers }),
    );
    const schema = extendSchema(
      transformed,
      parse('extend type Query { hint: String @rateLimit(action: "hint", window: 60, limit: 1) }'),
    );
    const app = Fastify();
    apps.push(app);
    await app.register(mercurius, { schema, cache: false });
    void app.register(mercuriusRateLimit, { directive });
    await expect(app.ready()).rejects.toThrow(/@rateLimit is used on Query\.hint/);
  });

  test('with status429, a wholly blocked operation is an HTTP 429', async () => {
    const directive = await directiveFor(true);
    const app = Fastify();
    apps.push(app);
    await app.register(mercurius, { schema: [directive.typeDefs, sdl], resolvers, cache: false });
    await app.register(mercuriusRateLimit, { directive });
    const url = `${await app.listen({ port: 0, host: '127.0.0.1' })}/graphql`;
    const statuses = [];
    for (let i = 0; i < 4; i++) {
      statuses.push((await postGraphQL(url, 'mutation { submitFlag }', 'team')).status);
    }
    expect(statuses).toEqual([200, 200, 200, 429]);
  });

  test('a schema replaced later without the transform runs no operation', async () => {
    const directive = await directiveFor();
    const app = Fastify();
    apps.push(app);
    await app.register(mercurius, { schema: [directive.typeDefs, sdl], resolvers, cache: false });
    await app.register(mercuriusRateLimit, { directive });
    await app.ready();
    app.graphql.replaceSchema(
      makeExecutableSchema({ typeDefs: [directive.typeDefs, sdl], resolvers }),
    );
    const url = `${await app.listen({ port: 0, host: '127.0.0.1' })}/graphql`;
    const { body } = await postGraphQL(url, 'mutation { submitFlag }', 'team');
    expect(body.data?.submitFlag ?? null).toBeNull();
    expect(body.errors?.[0]?.message).toMatch(/@rateLimit is used on Mutation\.submitFlag/);
  });

  test('each operation of a batch is priced by its own operationName', async () => {
    const directive = await directiveFor();
    const app = Fastify();
    apps.push(app);
    const priced = `${sdl}\nextend type Query { hint: String @cost(weight: 40) }`;
    await app.register(mercurius, {
      schema: [directive.typeDefs, priced],
      resolvers: { ...resolvers, Query: { hint: () => 'h' } },
      allowBatchedQueries: true,
      cache: false,
    });
    await app.register(mercuriusRateLimit, { directive });
    const url = `${await app.listen({ port: 0, host: '127.0.0.1' })}/graphql`;
    const query = 'query Cheap { ok } query Dear { hint }';
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: randomUUID() },
      body: JSON.stringify([
        { query, operationName: 'Dear' },
        { query, operationName: 'Cheap' },
      ]),
    });
    const results = (await response.json()) as GraphQLResponse['body'][];
    const costs = results.map(
      (r) => (r.extensions?.cost as { requestedQueryCost: number }).requestedQueryCost,
    );
    expect(costs).toEqual([40, 0]);
  });
});
