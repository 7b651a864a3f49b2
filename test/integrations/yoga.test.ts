import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import { envelop, useEngine, useSchema, type Plugin as EnvelopPlugin } from '@envelop/core';
import { makeExecutableSchema } from '@graphql-tools/schema';
import { execute, parse, specifiedRules, validate, type GraphQLSchema } from 'graphql';
import { createYoga, type Plugin as YogaPlugin, type YogaInitialContext } from 'graphql-yoga';

import {
  createMemoryStore,
  RateLimitConfigError,
  rateLimitDirective,
  type RateLimitDirectiveOptions,
} from '../../src';
import { releaseTogether } from '../support/barrier';
import { errorCodes, httpClient, postGraphQL, type GraphQLResponse } from '../support/http';
import { closeClients, connectRedis, uniquePrefix } from '../support/redis';
import { openedRedisStore } from '../support/stores';

/*
 * GraphQL Yoga 5 over real HTTP, started once for the file: `/graphql` with `exposeLimits`,
 * `/strict` with `status429` and batching. Every test uses a team of its own.
 */

const SDL = `type Query { ping: Boolean, open: Boolean }
  type Mutation {
    submit: Boolean @rateLimit(action: "submit", window: 60, limit: 3)
    burst: Boolean @rateLimit(action: "burst", window: 60, limit: 5)
  }`;
const resolvers = {
  Query: { ping: () => true, open: () => true },
  Mutation: { submit: () => true, burst: () => true },
};
/** The team is the bearer token, read from the Fetch API request Yoga puts in the context. */
const identify = ({ request }: YogaInitialContext) =>
  request.headers.get('authorization')?.replace(/^Bearer /, '');

function limitedSchema(options: RateLimitDirectiveOptions) {
  const directive = rateLimitDirective<YogaInitialContext>({ identify, ...options });
  const schema = directive.transformer(
    makeExecutableSchema({ typeDefs: [directive.typeDefs, SDL], resolvers }),
  );
  return { schema, plugin: directive.envelopPlugin };
}

let server: Server;
let base: string;

beforeAll(async () => {
  const store = await openedRedisStore({ client: await connectRedis(), prefix: uniquePrefix() });
  const lenient = limitedSchema({ store, exposeLimits: true });
  const strict = limitedSchema({ store, status429: true });
  const yoga = createYoga({ schema: lenient.schema, plugins: [lenient.plugin], logging: false });
  const yogaStrict = createYoga({
    schema: strict.schema,
    plugins: [strict.plugin],
    graphqlEndpoint: '/strict',
    batching: true,
    logging: false,
  });
  server = createServer((req, res) => {
    void (req.url?.startsWith('/strict') ? yogaStrict : yoga)(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  await closeClients();
});

const team = () => `team-${randomUUID()}`;
const post = (path: string, query: string, token: string) =>
  postGraphQL(`${base}${path}`, query, token);

test('the plugin is an envelop plugin and a Yoga plugin, by type', () => {
  const { envelopPlugin } = rateLimitDirective({ store: createMemoryStore() });
  const asEnvelop: EnvelopPlugin = envelopPlugin;
  const asYoga: YogaPlugin<YogaInitialContext> = envelopPlugin;
  expect(asEnvelop).toBe(asYoga);
});

test('RateLimit and RateLimit-Policy follow the draft; a blocked hit adds Retry-After', async () => {
  const token = team();
  const first = await post('/graphql', 'mutation { submit }', token);
  expect(first.status).toBe(200);
  expect(first.headers.get('ratelimit-policy')).toBe('"submit";q=3;w=60');
  expect(first.headers.get('ratelimit')).toMatch(/^"submit";r=2;t=(59|60)$/);
  expect(first.headers.get('retry-after')).toBeNull();
  expect(first.body.extensions).toEqual({
    rateLimit: { submit: { limit: 3, remaining: 2, reset: expect.any(Number) } },
  });

  await post('/graphql', 'mutation { submit }', token);
  await post('/graphql', 'mutation { submit }', token);
  const blocked = await post('/graphql', 'mutation { submit }', token);
  expect(blocked.status).toBe(200);
  expect(errorCodes(blocked)).toEqual(['RATE_LIMITED']);
  const retryAfter = blocked.body.errors?.[0]?.extensions?.retryAfter;
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(blocked.headers.get('retry-after')).toBe(String(retryAfter));
  expect(blocked.headers.get('ratelimit')).toMatch(/^"submit";r=0;t=\d+$/);
  expect(blocked.body.extensions).toMatchObject({ rateLimit: { submit: { remaining: 0 } } });
});

test('the headers name the most constrained limit of the operation', async () => {
  const r = await post('/graphql', 'mutation { submit burst }', team());
  expect(r.headers.get('ratelimit-policy')).toBe('"submit";q=3;w=60');
  expect(r.body.extensions).toMatchObject({
    rateLimit: { submit: { remaining: 2 }, burst: { remaining: 4 } },
  });
});

test('an operation that touches no limited field carries no rate-limit header or extension', async () => {
  const r = await post('/graphql', '{ ping }', team());
  expect(r.body.data).toEqual({ ping: true });
  expect(r.headers.get('ratelimit')).toBeNull();
  expect(r.headers.get('ratelimit-policy')).toBeNull();
  expect(r.body.extensions).toBeUndefined();
});

test('status429: 429 with Retry-After once every root field is blocked, 200 for a partial result', async () => {
  const token = team();
  for (let i = 0; i < 3; i++) {
    expect((await post('/strict', 'mutation { submit }', token)).status).toBe(200);
  }
  const blocked = await post('/strict', 'mutation { submit }', token);
  expect(blocked.status).toBe(429);
  expect(errorCodes(blocked)).toEqual(['RATE_LIMITED']);
  expect(blocked.headers.get('retry-after')).toBe(
    String(blocked.body.errors?.[0]?.extensions?.retryAfter),
  );
  expect(blocked.headers.get('content-type')).toMatch(/json/);
  // the strict endpoint does not expose limits: that option is per directive
  expect(blocked.body.extensions).toBeUndefined();

  const partial = await post('/strict', 'mutation { submit burst }', token);
  expect(partial.status).toBe(200);
  expect(partial.body.data).toEqual({ submit: null, burst: true });
  expect(partial.headers.get('retry-after')).not.toBeNull();
});

test('status429 with a batch: 429 only when every operation of the batch was blocked', async () => {
  const token = team();
  const batch = async (queries: string[]) => {
    const response = await fetch(`${base}/strict`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify(queries.map((query) => ({ query }))),
      signal: AbortSignal.timeout(10_000),
    });
    return { status: response.status, headers: response.headers, body: await response.json() };
  };
  const first = await batch(['mutation { submit }', 'mutation { submit }', 'mutation { submit }']);
  expect(first.status).toBe(200);
  // the three hits of one request: the most constrained is the last, with nothing left
  expect(first.headers.get('ratelimit')).toMatch(/^"submit";r=0;/);
  const mixed = await batch(['mutation { submit }', '{ open }']);
  expect(mixed.status).toBe(200);
  expect(mixed.headers.get('retry-after')).not.toBeNull();
  const blocked = await batch(['mutation { submit }', 'mutation { submit }']);
  expect(blocked.status).toBe(429);
  expect(blocked.body).toHaveLength(2);
});

test('simultaneous requests: exactly the limit passes, and each response reports its own hit', async () => {
  const token = team();
  const N = 16;
  const LIMIT = 5;
  const responses = await releaseTogether(N, async () => {
    const client = httpClient();
    return async (): Promise<GraphQLResponse> => {
      try {
        return await client.post(`${base}/graphql`, 'mutation { burst }', token);
      } finally {
        await client.close();
      }
    };
  });
  const passed = responses.filter((r) => r.body.data?.burst === true);
  expect(passed).toHaveLength(LIMIT);
  const blocked = responses.filter((r) => errorCodes(r)[0] === 'RATE_LIMITED');
  expect(blocked).toHaveLength(N - LIMIT);
  // each passing response carries the units its own hit left: 4, 3, 2, 1, 0 once each
  const left = passed.map((r) => /;r=(\d+);/.exec(r.headers.get('ratelimit') ?? '')?.[1]);
  expect(left.sort()).toEqual(['0', '1', '2', '3', '4']);
  expect(passed.every((r) => r.headers.get('retry-after') === null)).toBe(true);
  for (const r of blocked) {
    expect(r.headers.get('retry-after')).toBe(String(r.body.errors?.[0]?.extensions?.retryAfter));
  }
});

describe('the untransformed-schema guard', () => {
  const untransformed = (): { schema: GraphQLSchema; plugin: EnvelopPlugin } => {
    const { typeDefs, envelopPlugin } = rateLimitDirective({ store: createMemoryStore() });
    const schema = makeExecutableSchema({ typeDefs: [typeDefs, SDL], resolvers });
    return { schema, plugin: envelopPlugin };
  };

  test('createYoga refuses a schema that uses the directive without the transformer', () => {
    const { schema, plugin } = untransformed();
    expect(() => createYoga({ schema, plugins: [plugin], logging: false })).toThrow(
      RateLimitConfigError,
    );
    expect(() => createYoga({ schema, plugins: [plugin], logging: false })).toThrow(
      /Mutation\.submit, Mutation\.burst .*transformer/,
    );
  });

  test('so does envelop itself, on any envelop-based server', () => {
    const { schema, plugin } = untransformed();
    const engine = useEngine({ parse, validate, execute, specifiedRules });
    expect(() => envelop({ plugins: [engine, useSchema(schema), plugin] })).toThrow(
      RateLimitConfigError,
    );
  });
});

test('a bare envelop server (no HTTP layer) gets the limits and extensions.rateLimit', async () => {
  const { schema, plugin } = limitedSchema({ store: createMemoryStore(), exposeLimits: true });
  const getEnveloped = envelop({
    plugins: [useEngine({ parse, validate, execute, specifiedRules }), useSchema(schema), plugin],
  });
  const run = async () => {
    const request = new Request('http://localhost/graphql', {
      headers: { authorization: 'Bearer bare' },
    });
    const { contextFactory, execute: run, schema: s } = getEnveloped({ request });
    return run({
      schema: s,
      document: parse('mutation { submit }'),
      contextValue: await contextFactory(),
    });
  };
  const results = [await run(), await run(), await run(), await run()];
  expect(results.map((r) => (r as { extensions?: unknown }).extensions)).toEqual([
    { rateLimit: { submit: { limit: 3, remaining: 2, reset: 60 } } },
    { rateLimit: { submit: { limit: 3, remaining: 1, reset: 60 } } },
    { rateLimit: { submit: { limit: 3, remaining: 0, reset: 60 } } },
    { rateLimit: { submit: { limit: 3, remaining: 0, reset: 60 } } },
  ]);
  expect((results[3] as { errors?: { extensions?: unknown }[] }).errors?.[0]?.extensions).toEqual(
    expect.objectContaining({ code: 'RATE_LIMITED' }),
  );
});
