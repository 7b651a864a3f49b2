import { Redis } from 'ioredis';

import {
  createMemoryStore,
  createRedisStore,
  RateLimitConfigError,
  rateLimitDirective,
  type DecisionEvent,
  type RateLimitStore,
} from '../../src';
import { releaseTogether } from '../support/barrier';
import { freePort } from '../support/processes';
import { closeClients, connectRedis, uniquePrefix } from '../support/redis';
import { codes, limitedSchema, run } from '../support/schema';

/*
 * `fallbackStore`: when the store fails or times out, a hit is decided by the fallback, so limits
 * hold per process through an outage; `onStoreError` answers only when the fallback fails too.
 */

afterAll(closeClients);

const SDL = `type Query { ping: Int }
  type Mutation { submit: Boolean @rateLimit(action: "submit", window: 60, limit: 3) }`;
const resolvers = { Mutation: { submit: () => true } };
const team = { team: { id: 't' } };

const dead: Redis[] = [];
afterAll(() => dead.forEach((c) => c.disconnect()));

/** A Redis store whose server is not there: every hit fails. */
async function deadStore(): Promise<RateLimitStore> {
  const client = new Redis({
    port: await freePort(),
    maxRetriesPerRequest: 0,
    disconnectTimeout: 0,
  });
  client.on('error', () => undefined);
  dead.push(client);
  return createRedisStore({ client, prefix: uniquePrefix() });
}

test('with Redis down, exactly `limit` of 20 simultaneous hits pass on a memory fallback', async () => {
  const events: DecisionEvent[] = [];
  const schema = limitedSchema(SDL, resolvers, {
    store: await deadStore(),
    fallbackStore: createMemoryStore(),
    onDecision: (e) => events.push(e),
  });
  const results = await releaseTogether(
    20,
    async () => () => run(schema, 'mutation { submit }', team),
  );
  expect(results.filter((r) => r.data?.submit === true)).toHaveLength(3);
  expect(results.flatMap(codes).filter((c) => c === 'RATE_LIMITED')).toHaveLength(17);
  expect(events).toHaveLength(20);
  for (const e of events) {
    expect(e.decidedBy).toBe('fallback');
    expect(e.error).toBeInstanceOf(Error);
  }
});

test('a fallback that fails too leaves the answer to onStoreError', async () => {
  const failing: RateLimitStore = { hit: () => Promise.reject(new Error('fallback down')) };
  const deny = limitedSchema(SDL, resolvers, { store: await deadStore(), fallbackStore: failing });
  expect(codes(await run(deny, 'mutation { submit }', team))).toEqual(['RATE_LIMIT_UNAVAILABLE']);
  const allow = limitedSchema(SDL, resolvers, {
    store: await deadStore(),
    fallbackStore: failing,
    onStoreError: 'allow',
  });
  expect((await run(allow, 'mutation { submit }', team)).data).toEqual({ submit: true });
});

test('a store whose hit throws instead of rejecting fails like one that rejects', async () => {
  const throwing: RateLimitStore = {
    hit: () => {
      throw new Error('store broken');
    },
  };
  const events: DecisionEvent[] = [];
  const schema = limitedSchema(SDL, resolvers, {
    store: throwing,
    fallbackStore: createMemoryStore(),
    onDecision: (e) => events.push(e),
  });
  expect((await run(schema, 'mutation { submit }', team)).data).toEqual({ submit: true });
  expect(events.map((e) => [e.decidedBy, e.error?.message])).toEqual([
    ['fallback', 'store broken'],
  ]);
  // the fallback throwing too: onStoreError answers, with the store's error
  const deny = limitedSchema(SDL, resolvers, { store: throwing, fallbackStore: throwing });
  expect(codes(await run(deny, 'mutation { submit }', team))).toEqual(['RATE_LIMIT_UNAVAILABLE']);
  const allow = limitedSchema(SDL, resolvers, {
    store: throwing,
    fallbackStore: throwing,
    onStoreError: 'allow',
  });
  expect((await run(allow, 'mutation { submit }', team)).data).toEqual({ submit: true });
});

test('while the store answers, the fallback is never asked and events say store', async () => {
  const events: DecisionEvent[] = [];
  let asked = 0;
  const fallbackStore: RateLimitStore = {
    hit: () => {
      asked++;
      return Promise.reject(new Error('unused'));
    },
  };
  const schema = limitedSchema(SDL, resolvers, {
    store: createRedisStore({ client: await connectRedis(), prefix: uniquePrefix() }),
    fallbackStore,
    onDecision: (e) => events.push(e),
  });
  for (let i = 0; i < 4; i++) await run(schema, 'mutation { submit }', team);
  expect(asked).toBe(0);
  expect(events.map((e) => [e.decidedBy, e.allowed])).toEqual([
    ['store', true],
    ['store', true],
    ['store', true],
    ['store', false],
  ]);
});

test('a fallbackStore that is not a store throws at construction', () => {
  expect(() =>
    rateLimitDirective({ store: createMemoryStore(), fallbackStore: {} as RateLimitStore }),
  ).toThrow(RateLimitConfigError);
});
