import { makeExecutableSchema } from '@graphql-tools/schema';
import { Redis } from 'ioredis';

import {
  createMemoryStore,
  createRedisStore,
  rateLimitDirective,
  type RateLimitDirectiveOptions,
} from '../../src';
import { freePort } from '../support/processes';
import { closeClients, uniquePrefix } from '../support/redis';
import { codes, run } from '../support/schema';
import { freshStore, STORE_KINDS, type StoreUnderTest } from '../support/stores';

/* Operators' controls: peek counts nothing, reset makes limits whole again. */

afterAll(closeClients);

const SDL = `
  type Query { ping: Int }
  type Mutation {
    submit: Boolean
      @rateLimit(action: "submit", window: 60, limit: 3)
      @rateLimit(action: "submit", window: 1, limit: 2, algorithm: SLIDING_WINDOW)
    other: Boolean @rateLimit(action: "other", window: 60, limit: 1)
    login(email: String!): Boolean
      @rateLimit(action: "login", window: 60, limit: 2, algorithm: TOKEN_BUCKET, by: "ip")
  }
`;
const ok = (): boolean => true;

function limiter(options: RateLimitDirectiveOptions) {
  const directive = rateLimitDirective({
    identities: { ip: (ctx: { ip?: string }) => ctx.ip },
    // no test here is about the store's deadline: a loaded machine's slow moment fails none
    timeoutMs: 5_000,
    ...options,
  });
  const schema = directive.transformer(
    makeExecutableSchema({
      typeDefs: [directive.typeDefs, SDL],
      resolvers: { Mutation: { submit: ok, other: ok, login: ok } },
    }),
  );
  return { ...directive, schema };
}
const team = (id: string) => ({ team: { id } });

describe.each(STORE_KINDS)('%s store', (kind) => {
  let s: StoreUnderTest;
  beforeEach(async () => {
    s = await freshStore(kind);
  });

  test('peek counts nothing and matches what a hit then sees', async () => {
    const { schema, peek } = limiter({ store: s.store });
    const before = await peek({ identity: 'a', action: 'submit' });
    expect(before).toEqual([
      {
        action: 'submit',
        algorithm: 'FIXED_WINDOW',
        window: 60,
        limit: 3,
        remaining: 3,
        resetMs: 0,
      },
      {
        action: 'submit',
        algorithm: 'SLIDING_WINDOW',
        window: 1,
        limit: 2,
        remaining: 2,
        resetMs: 0,
      },
    ]);
    await run(schema, 'mutation { submit }', team('a'));
    for (let i = 0; i < 3; i++) {
      const now = await peek({ identity: 'a', action: 'submit' });
      expect(now.map((l) => l.remaining)).toEqual([2, 1]);
      expect(now[0]?.resetMs).toBeGreaterThan(59_000);
      expect(now[1]?.resetMs).toBeGreaterThan(0);
    }
    await run(schema, 'mutation { submit }', team('a'));
    expect((await peek({ identity: 'a', action: 'submit' })).map((l) => l.remaining)).toEqual([
      1, 0,
    ]);
    // the sliding limit is used up: the next hit is blocked, as peek said
    expect(codes(await run(schema, 'mutation { submit }', team('a')))).toEqual(['RATE_LIMITED']);
  });

  test('reset makes every limit of the action whole at once and leaves the rest alone', async () => {
    const { schema, peek, reset } = limiter({ store: s.store });
    for (const id of ['a', 'b']) {
      await run(schema, 'mutation { s1: submit s2: submit other }', team(id));
    }
    await reset({ identity: 'a', action: 'submit' });
    expect((await peek({ identity: 'a', action: 'submit' })).map((l) => l.remaining)).toEqual([
      3, 2,
    ]);
    expect((await peek({ identity: 'b', action: 'submit' })).map((l) => l.remaining)).toEqual([
      1, 0,
    ]);
    expect((await peek({ identity: 'a', action: 'other' })).map((l) => l.remaining)).toEqual([0]);
    const again = await run(schema, 'mutation { s1: submit s2: submit }', team('a'));
    expect(again.data).toEqual({ s1: true, s2: true });
  });

  test('by names the source, as in the directive', async () => {
    const { schema, peek, reset } = limiter({ store: s.store });
    await run(schema, 'mutation { a: login(email: "x") b: login(email: "y") }', { ip: '10.0.0.1' });
    const [bucket] = await peek({ identity: '10.0.0.1', action: 'login', by: 'ip' });
    expect(bucket?.remaining).toBe(0);
    expect(codes(await run(schema, 'mutation { login(email: "z") }', { ip: '10.0.0.1' }))).toEqual([
      'RATE_LIMITED',
    ]);
    await reset({ identity: '10.0.0.1', action: 'login', by: 'ip' });
    expect((await run(schema, 'mutation { login(email: "z") }', { ip: '10.0.0.1' })).data).toEqual({
      login: true,
    });
  });

  test('an action transformer never saw, or a bad identity, rejects', async () => {
    const { peek, reset } = limiter({ store: s.store });
    await expect(peek({ identity: 'a', action: 'nope' })).rejects.toThrow(/action: "nope"/);
    await expect(reset({ identity: 'a', action: 'login' })).rejects.toThrow(/was seen/);
    await expect(peek({ identity: '', action: 'submit' })).rejects.toThrow(/identity/);
  });
});

test('rules() gives the checked rules transformer saw, by field, and changing them changes no limit', async () => {
  const { schema, rules } = limiter({ store: createMemoryStore() });
  const seen = rules();
  expect([...seen.keys()].sort()).toEqual(['Mutation.login', 'Mutation.other', 'Mutation.submit']);
  expect(seen.get('Mutation.submit')).toEqual([
    { action: 'submit', algorithm: 'FIXED_WINDOW', windowSeconds: 60, limit: 3, cost: 1 },
    { action: 'submit', algorithm: 'SLIDING_WINDOW', windowSeconds: 1, limit: 2, cost: 1 },
  ]);
  expect(seen.get('Mutation.login')).toEqual([
    { action: 'login', algorithm: 'TOKEN_BUCKET', windowSeconds: 60, limit: 2, cost: 1, by: 'ip' },
  ]);
  // what a server is shown is a copy: neither the rules nor the map reach back into the limits
  expect(Object.isFrozen(seen.get('Mutation.other')?.[0])).toBe(true);
  (seen as Map<string, unknown>).delete('Mutation.other');
  expect(rules().has('Mutation.other')).toBe(true);
  const result = await run(schema, 'mutation { o1: other o2: other }', team('r'));
  expect(codes(result)).toEqual(['RATE_LIMITED']);
});

test('with Redis down, peek and reset reject within timeoutMs', async () => {
  const client = new Redis({
    port: await freePort(),
    maxRetriesPerRequest: 0,
    disconnectTimeout: 0,
  });
  client.on('error', () => undefined);
  try {
    const { peek, reset } = limiter({
      store: createRedisStore({ client, prefix: uniquePrefix() }),
      timeoutMs: 100,
    });
    await expect(peek({ identity: 'a', action: 'submit' })).rejects.toThrow();
    await expect(reset({ identity: 'a', action: 'submit' })).rejects.toThrow();
  } finally {
    client.disconnect();
  }
});
