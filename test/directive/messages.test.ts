import { makeExecutableSchema } from '@graphql-tools/schema';
import { buildSchema, graphql, type GraphQLSchema } from 'graphql';

import { createMemoryStore, RateLimitConfigError, rateLimitDirective } from '../../src';
import { limitedSchema, run } from '../support/schema';

/*
 * What a newcomer reads when something is wrong: the value as given (a string quoted), a missing
 * value called missing, the valid choices, and what to do.
 */

const store = createMemoryStore();

test('an option given as a string is shown quoted', () => {
  const build = () => rateLimitDirective({ store, timeoutMs: '250' as never });
  expect(build).toThrow(RateLimitConfigError);
  expect(build).toThrow('timeoutMs must be a positive number of milliseconds, got "250"');
});

test('a missing budget value is called missing', () => {
  const build = () => rateLimitDirective({ store, budget: { limit: 100 } as never });
  expect(build).toThrow(/budget\.window is missing: it must be a whole number of seconds >= 1/);
  expect(() =>
    rateLimitDirective({ store, budget: { limit: '100', window: 60 } as never }),
  ).toThrow(/budget\.limit "100" must be/);
});

test('an unknown algorithm lists the valid ones', () => {
  const { typeDefs, transformer } = rateLimitDirective({ store });
  const schema = makeExecutableSchema({
    typeDefs: [
      typeDefs,
      'type Query { a: Int @rateLimit(action: "a", window: 60, limit: 3, algorithm: SLIDING) }',
    ],
  });
  expect(() => transformer(schema)).toThrow(
    /Query\.a: @rateLimit: Argument "algorithm" has invalid value SLIDING\. \(valid: FIXED_WINDOW, SLIDING_WINDOW, TOKEN_BUCKET, CONCURRENCY\)/,
  );
});

test('a schema built without the typeDefs hears that it should add them', () => {
  const { transformer } = rateLimitDirective({ store });
  const schema = buildSchema(
    'type Query { a: Int @rateLimit(action: "a", window: "60", limit: 3) }',
    {
      assumeValidSDL: true,
    },
  );
  expect(() => transformer(schema)).toThrow(
    /Query\.a: @rateLimit\(window: "60"\) must be .*add the `typeDefs` of rateLimitDirective\(\)/,
  );
});

test('peek and reset of an unknown action list the known ones', async () => {
  const { typeDefs, transformer, peek, reset } = rateLimitDirective({
    store,
    identities: { ip: () => '1.2.3.4' },
  });
  transformer(
    makeExecutableSchema({
      typeDefs: [
        typeDefs,
        `type Query {
          a: Int @rateLimit(action: "search", window: 60, limit: 3)
          b: Int @rateLimit(action: "login", window: 60, limit: 3, by: "ip")
        }`,
      ],
    }),
  );
  const known = /was seen by transformer; known: "search", "login" by "ip"/;
  await expect(peek({ identity: 't', action: 'serach' })).rejects.toThrow(known);
  await expect(reset({ identity: 't', action: 'login' })).rejects.toThrow(known);
  const none = rateLimitDirective({ store });
  await expect(none.peek({ identity: 't', action: 'search' })).rejects.toThrow(
    /known: none \(was the schema passed through transformer\?\)/,
  );
});

describe('an identity missing on every hit', () => {
  const sdl = `type Query { a: Int }
    type Mutation {
      go: Boolean @rateLimit(action: "go", window: 60, limit: 1000)
      login: Boolean @rateLimit(action: "login", window: 60, limit: 1000, by: "ip")
    }`;
  const setup = () => {
    const { typeDefs, transformer } = rateLimitDirective({
      store: createMemoryStore(),
      identities: { ip: async (ctx: { ip?: string }) => ctx.ip },
    });
    return transformer(
      makeExecutableSchema({
        typeDefs: [typeDefs, sdl],
        resolvers: { Mutation: { go: () => true, login: () => true } },
      }),
    );
  };
  let warnings: string[];
  let emitWarning: jest.SpyInstance;
  beforeEach(() => {
    warnings = [];
    emitWarning = jest
      .spyOn(process, 'emitWarning')
      .mockImplementation((message) => void warnings.push(String(message)));
  });
  afterEach(() => emitWarning.mockRestore());
  const hits = async (schema: GraphQLSchema, field: string, context: object, n: number) => {
    for (let i = 0; i < n; i++)
      await graphql({ schema, source: `mutation { ${field} }`, contextValue: context });
  };

  test('warns once after the first 100 limited hits, naming identify and its default', async () => {
    const schema = setup();
    // an app whose context holds `user`, with the default identify (context.team?.id)
    await hits(schema, 'go', { user: { id: 'u1' } }, 99);
    expect(warnings).toEqual([]);
    await hits(schema, 'go', { user: { id: 'u1' } }, 101);
    expect(warnings).toEqual([
      expect.stringMatching(
        /identify gave no identity for the first 100 limited hits .* reads context\.team\?\.id/,
      ),
    ]);
  });

  test('a named source that never answers is warned about by name', async () => {
    const schema = setup();
    await hits(schema, 'login', {}, 100);
    expect(warnings).toEqual([expect.stringMatching(/identity source "ip" gave no identity/)]);
  });

  test('no warning once an identity was found', async () => {
    const schema = setup();
    await hits(schema, 'go', { team: { id: 't' } }, 1);
    await hits(schema, 'go', {}, 150);
    expect(warnings).toEqual([]);
  });
});

test('a store option given as a string is shown quoted', () => {
  expect(() => createMemoryStore({ maxEntries: '1000' as never })).toThrow(
    'createMemoryStore: maxEntries must be a whole number >= 1, got "1000"',
  );
});

test('a CONCURRENCY refusal says the slots are held by calls in flight, and hints a short poll', async () => {
  let finish = (): void => undefined;
  const running = new Promise<number>((resolve) => (finish = () => resolve(1)));
  const schema = limitedSchema(
    'type Query { work: Int @rateLimit(action: "work", window: 30, limit: 1, algorithm: CONCURRENCY) }',
    { Query: { work: () => running } },
    { store: createMemoryStore(), identify: () => 'caller' },
  );
  const first = run(schema, '{ work }');
  const [refusal] = (await run(schema, '{ work }')).errors ?? [];
  finish();
  expect((await first).data).toEqual({ work: 1 });
  expect(refusal?.message).toBe(
    'Concurrency limit reached for "work": 1 call in flight, the most at once; ' +
      'a slot frees when one ends, retry in 1s',
  );
  // the lease has 30 s to run, but a slot frees whenever a call ends: the hint is a poll
  expect(refusal?.extensions).toMatchObject({ reason: 'CONCURRENCY', retryAfter: 1, window: 30 });
});
