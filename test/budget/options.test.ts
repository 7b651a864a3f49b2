import { makeExecutableSchema } from '@graphql-tools/schema';

import { createMemoryStore, RateLimitConfigError, rateLimitDirective } from '../../src';

describe('the budget option and the cost directives, at construction and schema build', () => {
  const store = createMemoryStore();
  const identities = { ip: () => '10.0.0.1' };
  test.each([
    [{ limit: 0, window: 60 }, /budget\.limit 0 must be a whole number >= 1/],
    [{ limit: 10, window: 1.5 }, /budget\.window 1.5/],
    [{ limit: 10, window: 60, algorithm: 'LEAKY' }, /budget\.algorithm "LEAKY" must be one of/],
    [
      { limit: 10, window: 60, by: 'args.id' },
      /budget\.by "args\.id": an operation has no arguments/,
    ],
    [{ limit: 10, window: 60, by: 'team' }, /budget\.by "team" is not one of `identities` \(ip\)/],
    [{ limit: 10, window: 60, maxCost: 0 }, /budget\.maxCost must be a whole number >= 1/],
    [{ limit: 10, window: 60, listSize: -1 }, /budget\.listSize must be a whole number >= 0/],
    [{ limit: 10, windowSeconds: 60 }, /budget\.windowSeconds is not an option/],
  ])('%j is refused', (budget, message) => {
    expect(() => rateLimitDirective({ store, identities, budget: budget as never })).toThrow(
      RateLimitConfigError,
    );
    expect(() => rateLimitDirective({ store, identities, budget: budget as never })).toThrow(
      message,
    );
  });

  test('by names an identities source, and peek and reset know the budget', async () => {
    const { peek, reset } = rateLimitDirective({
      store,
      identities,
      budget: { limit: 10, window: 60, by: 'ip' },
    });
    await expect(peek({ identity: '10.0.0.1', action: 'budget', by: 'ip' })).resolves.toEqual([
      expect.objectContaining({ action: 'budget', algorithm: 'TOKEN_BUCKET', limit: 10 }),
    ]);
    await expect(reset({ identity: '10.0.0.1', action: 'budget', by: 'ip' })).resolves.toBe(
      undefined,
    );
  });

  test('typeDefs declare @cost and @listSize; transformer names a bad one by Type.field', () => {
    const { typeDefs, transformer } = rateLimitDirective({ store });
    const schema = (sdl: string) => makeExecutableSchema({ typeDefs: [typeDefs, sdl] });
    expect(() => transformer(schema('type Query { a: Int @cost(weight: 2) }'))).not.toThrow();
    expect(() =>
      transformer(
        schema('type Query { a(first: String): [Int] @listSize(slicingArguments: ["first"]) }'),
      ),
    ).toThrow(/Query\.a/);
  });
});

test("the README's recipes are accepted: GitHub's hourly points and Shopify's leaky bucket", () => {
  const store = createMemoryStore();
  const github = rateLimitDirective({
    store,
    identify: (ctx: { user?: { id: string } }) => ctx.user?.id,
    budget: { limit: 5_000, window: 3_600, algorithm: 'FIXED_WINDOW' },
  });
  const shopify = rateLimitDirective({
    store,
    identities: { shop: (ctx: { shop?: { id: string } }) => ctx.shop?.id },
    budget: { limit: 1_000, window: 20, by: 'shop' },
  });
  expect(github.plugin).toBeDefined();
  expect(shopify.envelopPlugin).toBeDefined();
});
