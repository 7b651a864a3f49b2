import { makeExecutableSchema } from '@graphql-tools/schema';

import {
  createMemoryStore,
  RateLimitConfigError,
  rateLimitDirective,
  type RateLimitRule,
} from '../src';
import { closeClients } from './support/redis';
import { freshStore, STORE_KINDS } from './support/stores';

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
  test(`a SLIDING_WINDOW limit above 10000 is refused; 10000 is accepted`, () => {
    const sliding = (limit: number) =>
      build(`action: "s", window: 60, limit: ${limit}, algorithm: SLIDING_WINDOW`);
    expect(sliding(10_001)).toThrow(RateLimitConfigError);
    expect(sliding(10_001)).toThrow(/Mutation\.go: @rateLimit\(limit: 10001\) exceeds 10000/);
    expect(sliding(10_000)).not.toThrow();
    // the other algorithms keep no log: their limit is not bounded so
    expect(build('action: "f", window: 60, limit: 1000000')).not.toThrow();
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
