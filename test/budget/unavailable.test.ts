import { composeServices } from '@apollo/composition';
import { createGatewayRuntime } from '@graphql-hive/gateway-runtime';
import { parse } from 'graphql';
import { Redis } from 'ioredis';

import { createRedisStore, rateLimitDirective, type RateLimitStore } from '../../src';
import { serveBudget, SERVER_KINDS, type ServerKind } from '../support/budget-servers';
import { freePort } from '../support/processes';
import { uniquePrefix } from '../support/redis';

/*
 * A budget whose store cannot decide refuses the operation with RATE_LIMIT_UNAVAILABLE (the
 * default `onStoreError: 'deny'`), answered HTTP 503 on every server, a gateway's included:
 * a status that tells clients to retry, not a server error (500) nor a success (200).
 */

const dead: Redis[] = [];
afterAll(() => dead.forEach((c) => c.disconnect()));

/** A Redis store whose server is not there: every take fails at once. */
async function deadStore(): Promise<RateLimitStore> {
  const client = new Redis({ port: await freePort(), maxRetriesPerRequest: 0, lazyConnect: true });
  client.on('error', () => undefined);
  dead.push(client);
  return createRedisStore({ client, prefix: uniquePrefix(), connectWaitMs: 50 });
}

const BUDGET = { limit: 1_000, window: 60 };

describe.each(SERVER_KINDS)('%s', (kind: ServerKind) => {
  test('a budget whose store is down: 503, RATE_LIMIT_UNAVAILABLE, nothing ran', async () => {
    const server = await serveBudget(kind, { store: await deadStore(), budget: BUDGET });
    try {
      const r = await server.run('{ items(first: 10) { id } }', 'team');
      expect(r.body.errors?.map((e) => e.extensions?.code)).toEqual(['RATE_LIMIT_UNAVAILABLE']);
      expect(r.body.errors?.[0]?.extensions?.http).toBeUndefined();
      expect(r.status).toBe(503);
      expect(server.runs.items).toBe(0);
    } finally {
      await server.stop();
    }
  });
});

test('Hive Gateway: a budget whose store is down answers 503, RATE_LIMIT_UNAVAILABLE', async () => {
  const sdl = `
    extend schema @link(url: "https://specs.apollo.dev/federation/v2.9", import: ["@key", "@listSize"])
    type Query {
      challenges(first: Int = 10): [Challenge!]! @listSize(slicingArguments: ["first"])
    }
    type Challenge @key(fields: "id") {
      id: ID!
    }`;
  const composed = composeServices([
    { name: 'challenges', typeDefs: parse(sdl), url: 'http://challenges.invalid/graphql' },
  ]);
  if (!composed.supergraphSdl) throw new Error(JSON.stringify(composed.errors));
  const { envelopPlugin } = rateLimitDirective({
    store: await deadStore(),
    identify: () => 'team',
    budget: BUDGET,
  });
  const gateway = createGatewayRuntime({
    supergraph: composed.supergraphSdl,
    plugins: () => [envelopPlugin],
    logging: false,
  });
  try {
    const response = await gateway.fetch('http://gateway/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ challenges(first: 5) { id } }' }),
    });
    const body = (await response.json()) as { errors?: { extensions?: { code?: string } }[] };
    expect(body.errors?.map((e) => e.extensions?.code)).toEqual(['RATE_LIMIT_UNAVAILABLE']);
    expect(response.status).toBe(503);
  } finally {
    await gateway.dispose();
  }
});
