import { validateHeaderValue } from 'node:http';

import { ApolloServer } from '@apollo/server';
import { makeExecutableSchema } from '@graphql-tools/schema';

import {
  ALGORITHMS,
  createMemoryStore,
  createRedisStore,
  RateLimitConfigError,
  rateLimitDirective,
  type RateLimitRule,
} from '../../src';
import { closeClients, connectRedis, keysUnder, uniquePrefix } from '../support/redis';
import { freshStore, STORE_KINDS } from '../support/stores';

/*
 * What a rule may hold, checked once: at schema build for a directive (the error names the field
 * and the argument), and at the store for a rule passed to `hit` directly.
 */

afterAll(closeClients);

const build = (args: string) => {
  const { typeDefs, transformer } = rateLimitDirective({ store: createMemoryStore() });
  return () =>
    transformer(
      makeExecutableSchema({
        typeDefs: [typeDefs, `type Query { a: Int } type Mutation { go: Int @rateLimit(${args}) }`],
      }),
    );
};

describe('schema build', () => {
  test.each([
    [
      'a character above U+00FF',
      '"team 🚩"',
      /Mutation\.go: @rateLimit\(action: "team 🚩"\) .* holds U\+1F6A9/,
    ],
    ['Latin-1', '"équipe"', /Mutation\.go: @rateLimit\(action: "équipe"\) .* holds U\+00E9/],
    ['a newline', '"a\\nb"', /Mutation\.go: @rateLimit\(action: "a\\nb"\)/],
    ['a control character', '"a\\u0007"', /Mutation\.go: @rateLimit\(action: "a\\u0007"\)/],
    [
      'DEL',
      '"a\\u007f"',
      /Mutation\.go: @rateLimit\(action: "a.*"\) must be printable ASCII \(space to ~\) but holds U\+007F/,
    ],
  ])('an action with %s is refused', (_, action, message) => {
    const transform = build(`action: ${action}, window: 60, limit: 3`);
    expect(transform).toThrow(RateLimitConfigError);
    expect(transform).toThrow(message);
  });

  test('every printable ASCII character is accepted, and reaches the headers as an RFC 8941 string', async () => {
    const action = Array.from({ length: 0x7f - 0x20 }, (_, i) =>
      String.fromCharCode(0x20 + i),
    ).join('');
    const { typeDefs, transformer, plugin } = rateLimitDirective({ store: createMemoryStore() });
    const schema = transformer(
      makeExecutableSchema({
        typeDefs: [
          typeDefs,
          `type Query { a: Int } type Mutation { go: Int @rateLimit(action: ${JSON.stringify(action)}, window: 60, limit: 3) }`,
        ],
        resolvers: { Mutation: { go: () => 1 } },
      }),
    );
    const server = new ApolloServer({ schema, plugins: [plugin] });
    await server.start();
    try {
      const { http } = await server.executeOperation(
        { query: 'mutation { go }' },
        { contextValue: { team: { id: 't' } } },
      );
      const policy = http.headers.get('ratelimit-policy') ?? '';
      // sf-string: DQUOTE *( unescaped / "\" ( DQUOTE / "\" ) ) DQUOTE, unescaped = %x20-21 / %x23-5B / %x5D-7E
      const match = /^"((?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\])*)";q=3;w=60$/.exec(policy);
      expect(match?.[1]?.replace(/\\(["\\])/g, '$1')).toBe(action);
      // what Node's HTTP server checks before it writes a header
      expect(() => validateHeaderValue('ratelimit-policy', policy)).not.toThrow();
    } finally {
      await server.stop();
    }
  });

  test(`a SLIDING_WINDOW limit above 10000 is refused; 10000 is accepted`, () => {
    const sliding = (limit: number) =>
      build(`action: "s", window: 60, limit: ${limit}, algorithm: SLIDING_WINDOW`);
    expect(sliding(10_001)).toThrow(RateLimitConfigError);
    expect(sliding(10_001)).toThrow(/Mutation\.go: @rateLimit\(limit: 10001\) exceeds 10000/);
    expect(sliding(10_000)).not.toThrow();
    // the other algorithms keep no log: their limit is not bounded so
    expect(build('action: "f", window: 60, limit: 1000000')).not.toThrow();
  });

  test('a window above 366 days is refused; 366 days is accepted', () => {
    const longest = build('action: "w", window: 2147483647, limit: 3, algorithm: SLIDING_WINDOW');
    expect(longest).toThrow(RateLimitConfigError);
    expect(longest).toThrow(/Mutation\.go: @rateLimit\(window: 2147483647\) exceeds 31622400/);
    expect(
      build('action: "w", window: 31622400, limit: 3, algorithm: SLIDING_WINDOW'),
    ).not.toThrow();
  });

  test('a TOKEN_BUCKET limit whose square reaches 2^53 is refused', () => {
    const bucket = (limit: number) =>
      build(`action: "t", window: 1000, limit: ${limit}, algorithm: TOKEN_BUCKET`);
    expect(bucket(94_906_266)).toThrow(/Mutation\.go: @rateLimit\(limit: 94906266\) exceeds/);
    expect(bucket(94_906_265)).not.toThrow();
  });
});

describe.each(STORE_KINDS)('%s store', (kind) => {
  const good: RateLimitRule = {
    action: 'a',
    algorithm: 'FIXED_WINDOW',
    windowSeconds: 60,
    limit: 3,
    cost: 1,
  };

  test.each<[string, Partial<Record<keyof RateLimitRule, unknown>>, RegExp]>([
    ['cost 0', { cost: 0 }, /cost 0 must be a whole number >= 1/],
    ['a negative cost', { cost: -2 }, /cost -2 must be/],
    ['a fractional cost', { cost: 1.5 }, /cost 1.5 must be/],
    ['cost above limit', { cost: 4 }, /cost 4 exceeds limit 3/],
    ['windowSeconds 0', { windowSeconds: 0 }, /windowSeconds 0 must be/],
    ['limit NaN', { limit: NaN }, /limit NaN must be/],
    ['limit Infinity', { limit: Infinity }, /limit Infinity must be/],
    ['an empty action', { action: '' }, /action "" must be a non-empty string/],
    ['an unknown algorithm', { algorithm: 'LEAKY' }, /algorithm "LEAKY" must be one of/],
    [
      'a SLIDING_WINDOW limit above 10000',
      { algorithm: 'SLIDING_WINDOW', limit: 1_000_000, cost: 1_000_000 },
      /limit 1000000 exceeds 10000/,
    ],
    ['windowSeconds 1e12', { windowSeconds: 1e12 }, /windowSeconds 1000000000000 exceeds 31622400/],
    [
      'a SLIDING_WINDOW of 2^53 - 1 seconds',
      { algorithm: 'SLIDING_WINDOW', windowSeconds: Number.MAX_SAFE_INTEGER },
      /windowSeconds 9007199254740991 exceeds 31622400/,
    ],
    [
      'a TOKEN_BUCKET of 2^53 - 1 seconds',
      { algorithm: 'TOKEN_BUCKET', windowSeconds: Number.MAX_SAFE_INTEGER },
      /windowSeconds 9007199254740991 exceeds/,
    ],
    ['a window one second above 366 days', { windowSeconds: 31_622_401 }, /exceeds 31622400/],
    ['a missing limit', { limit: undefined }, /limit is missing: it must be a whole number >= 1/],
    ['a limit given as a string', { limit: '3' }, /limit "3" must be a whole number >= 1/],
  ])(
    'a rule with %s is refused with RateLimitConfigError and counts nothing',
    async (_, bad, message) => {
      const { store } = await freshStore(kind);
      const rule = { ...good, ...bad } as RateLimitRule;
      await expect(store.hit('id', [good, rule])).rejects.toThrow(RateLimitConfigError);
      await expect(store.hit('id', [good, rule])).rejects.toThrow(message);
      // the good rule beside it was not counted either
      expect(await store.hit('id', [good])).toMatchObject({
        allowed: true,
        limits: [{ remaining: 2 }],
      });
    },
  );

  test('an identity that is not a string, or rules that are not an array, are refused', async () => {
    const { store } = await freshStore(kind);
    await expect(store.hit(7 as never, [good])).rejects.toThrow(RateLimitConfigError);
    await expect(store.hit('id', good as never)).rejects.toThrow(RateLimitConfigError);
    await expect(store.hit('id', [null as never])).rejects.toThrow(RateLimitConfigError);
  });
});

test.each(ALGORITHMS)(
  'the longest window counts on Redis, every key it writes has a TTL (%s)',
  async (algorithm) => {
    const client = await connectRedis();
    const prefix = uniquePrefix();
    const store = createRedisStore({ client, prefix });
    const rule: RateLimitRule = {
      action: 'a',
      algorithm,
      windowSeconds: 31_622_400,
      limit: 2,
      cost: 1,
    };
    const huge = { ...rule, windowSeconds: Number.MAX_SAFE_INTEGER };
    await expect(store.hit('id', [huge])).rejects.toThrow(RateLimitConfigError);
    expect(await keysUnder(client, prefix)).toEqual([]);
    expect(await store.hit('id', [rule])).toMatchObject({
      allowed: true,
      limits: [{ remaining: 1 }],
    });
    expect(await store.hit('id', [rule])).toMatchObject({ allowed: true });
    expect((await store.hit('id', [rule])).allowed).toBe(false);
    const [key] = await keysUnder(client, prefix);
    expect(await client.pttl(key as string)).toBeGreaterThan(0);
  },
);
