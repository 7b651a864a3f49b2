import { ApolloServer } from '@apollo/server';
import { makeExecutableSchema } from '@graphql-tools/schema';
import { fetch } from 'undici';

import {
  createMemoryStore,
  RateLimitConfigError,
  rateLimitDirective,
  type DecisionEvent,
} from '../../src';
import { startCtfServer, type CtfServer } from '../../server/src/app';
import { ctfData } from '../support/ctf';
import { errorCodes, postGraphQL, SUBMIT } from '../support/http';
import { closeClients, connectRedis, uniquePrefix } from '../support/redis';
import { openedRedisStore } from '../support/stores';

afterAll(closeClients);

describe('the reference server: headers and metrics', () => {
  let server: CtfServer;
  beforeEach(async () => {
    const store = await openedRedisStore({ client: await connectRedis(), prefix: uniquePrefix() });
    server = await startCtfServer({ data: ctfData(2), store, port: 0 });
  });
  afterEach(() => server.stop());

  test('RateLimit and RateLimit-Policy follow the draft; a blocked hit adds Retry-After', async () => {
    const first = await postGraphQL(server.url, SUBMIT, 'token-0', { c: 'c1', f: 'x' });
    expect(first.headers.get('ratelimit-policy')).toBe('"submit";q=3;w=60');
    expect(first.headers.get('ratelimit')).toMatch(/^"submit";r=2;t=(59|60)$/);
    expect(first.headers.get('retry-after')).toBeNull();
    expect(first.body.extensions).toMatchObject({
      rateLimit: { submit: { limit: 3, remaining: 2 } },
    });

    await postGraphQL(server.url, SUBMIT, 'token-0', { c: 'c1', f: 'x' });
    await postGraphQL(server.url, SUBMIT, 'token-0', { c: 'c1', f: 'x' });
    const blocked = await postGraphQL(server.url, SUBMIT, 'token-0', { c: 'c1', f: 'x' });
    expect(blocked.status).toBe(200);
    expect(errorCodes(blocked)).toEqual(['RATE_LIMITED']);
    const retryAfter = blocked.body.errors?.[0]?.extensions?.retryAfter;
    expect(blocked.headers.get('retry-after')).toBe(String(retryAfter));
    expect(blocked.headers.get('ratelimit')).toMatch(/^"submit";r=0;t=\d+$/);
  });

  test('an operation that touches no limited field carries no rate-limit headers', async () => {
    const result = await postGraphQL(server.url, '{ __typename }', 'token-0');
    expect(result.headers.get('ratelimit')).toBeNull();
  });

  test('/metrics counts N allowed and M blocked decisions exactly', async () => {
    for (let i = 0; i < 5; i++)
      await postGraphQL(server.url, SUBMIT, 'token-0', { c: 'c1', f: 'x' });
    for (let i = 0; i < 2; i++)
      await postGraphQL(server.url, SUBMIT, 'token-1', { c: 'c1', f: 'x' });
    const text = await (await fetch(server.url.replace('/graphql', '/metrics'))).text();
    expect(text).toContain(
      'graphql_rate_limit_decisions_total{action="submit",result="allowed",decided_by="store"} 5',
    );
    // Redis blocked team-0's fourth; this process remembered that block for its fifth.
    expect(text).toContain(
      'graphql_rate_limit_decisions_total{action="submit",result="blocked",decided_by="store"} 1',
    );
    expect(text).toContain(
      'graphql_rate_limit_decisions_total{action="submit",result="blocked",decided_by="cache"} 1',
    );
    // each submission was first taken from its team's budget (11 points: a mutation, an object)
    expect(text).toContain(
      'graphql_rate_limit_decisions_total{action="budget",result="allowed",decided_by="store"} 7',
    );
    expect(text).toMatch(/graphql_rate_limit_store_latency_seconds_count\{result="ok"\} 14/);
  });

  test('/health answers 200 while the store is reachable', async () => {
    const response = await fetch(server.url.replace('/graphql', '/health'));
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'ok', store: 'up' });
  });
});

const SDL = `type Query { ping: Int }
  type Mutation {
    a: Boolean @rateLimit(action: "a", window: 60, limit: 1)
    b: Boolean @rateLimit(action: "b", window: 30, limit: 5)
  }`;
const resolvers = { Mutation: { a: () => true, b: () => true } };

async function apollo(options: Partial<Parameters<typeof rateLimitDirective>[0]> = {}) {
  const events: DecisionEvent[] = [];
  const { typeDefs, transformer, plugin } = rateLimitDirective({
    store: createMemoryStore(),
    onDecision: (e) => events.push(e),
    ...options,
  });
  const server = new ApolloServer({
    schema: transformer(makeExecutableSchema({ typeDefs: [typeDefs, SDL], resolvers })),
    plugins: [plugin],
  });
  await server.start();
  const exec = async (query: string) => {
    const response = await server.executeOperation(
      { query },
      { contextValue: { team: { id: 't' } } },
    );
    const body = response.body.kind === 'single' ? response.body.singleResult : undefined;
    return { http: response.http, body };
  };
  return { server, exec, events };
}

test('the headers report the most constrained limit of the operation', async () => {
  const { server, exec } = await apollo();
  const r = await exec('mutation { a b }');
  expect(r.http.headers.get('ratelimit-policy')).toBe('"a";q=1;w=60');
  expect(r.http.headers.get('ratelimit')).toMatch(/^"a";r=0;t=60$/);
  await server.stop();
});

test('dryRun lets every hit through while reporting the ones it would have blocked', async () => {
  const { server, exec, events } = await apollo({ dryRun: true });
  const r = await exec('mutation { x: a y: a z: a }');
  expect(r.body?.errors).toBeUndefined();
  expect(r.body?.data).toEqual({ x: true, y: true, z: true });
  expect(events.map((e) => [e.allowed, e.dryRun])).toEqual([
    [true, false],
    [false, true],
    [false, true],
  ]);
  expect(r.http.headers.get('retry-after')).toBeUndefined();
  expect(r.http.headers.get('ratelimit')).toMatch(/^"a";r=0;/);
  await server.stop();
});

test('exposeLimits adds remaining and reset per action to the response extensions', async () => {
  const { server, exec } = await apollo({ exposeLimits: true });
  const r = await exec('mutation { a b }');
  expect(r.body?.extensions).toEqual({
    rateLimit: {
      a: { limit: 1, remaining: 0, reset: 60 },
      b: { limit: 5, remaining: 4, reset: 30 },
    },
  });
  await server.stop();
});

test('exposeLimits reports an action named __proto__ like any other', async () => {
  const { typeDefs, transformer, plugin } = rateLimitDirective({
    store: createMemoryStore(),
    exposeLimits: true,
  });
  const sdl = 'type Query { p: Boolean @rateLimit(action: "__proto__", window: 60, limit: 2) }';
  const server = new ApolloServer({
    schema: transformer(
      makeExecutableSchema({ typeDefs: [typeDefs, sdl], resolvers: { Query: { p: () => true } } }),
    ),
    plugins: [plugin],
  });
  await server.start();
  const response = await server.executeOperation(
    { query: '{ p }' },
    { contextValue: { team: { id: 't' } } },
  );
  const body = response.body.kind === 'single' ? response.body.singleResult : undefined;
  expect(JSON.parse(JSON.stringify(body?.extensions))).toEqual({
    rateLimit: { ['__proto__']: { limit: 2, remaining: 1, reset: 60 } },
  });
  await server.stop();
});

test('status429: 429 only when every root field was blocked', async () => {
  const { server, exec } = await apollo({ status429: true });
  expect((await exec('mutation { a }')).http.status).toBeUndefined();
  const partly = await exec('mutation { a b }');
  expect(partly.http.status).toBeUndefined();
  const all = await exec('mutation { a }');
  expect(all.http.status).toBe(429);
  expect(all.http.headers.get('retry-after')).toBe('60');
  await server.stop();
});

test('the guard refuses to start a server whose schema uses the directive without the transformer', async () => {
  const { typeDefs, plugin } = rateLimitDirective({ store: createMemoryStore() });
  const server = new ApolloServer({
    schema: makeExecutableSchema({ typeDefs: [typeDefs, SDL], resolvers }),
    plugins: [plugin],
  });
  const started = server.start();
  await expect(started).rejects.toThrow(
    /@rateLimit is used on Mutation\.a, Mutation\.b but the schema was not passed through the transformer/,
  );
  await expect(started).rejects.toBeInstanceOf(RateLimitConfigError);
});

test('the guard also sees a directive on an object type', async () => {
  const { typeDefs, plugin } = rateLimitDirective({ store: createMemoryStore() });
  const server = new ApolloServer({
    schema: makeExecutableSchema({
      typeDefs: [typeDefs, 'type Query @rateLimit(action: "q", window: 1, limit: 1) { ping: Int }'],
    }),
    plugins: [plugin],
  });
  await expect(server.start()).rejects.toThrow(/Query\.ping/);
});
