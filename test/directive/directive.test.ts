import { makeExecutableSchema } from '@graphql-tools/schema';
import { graphql, type ExecutionResult, type GraphQLError } from 'graphql';
import { Redis } from 'ioredis';

import {
  createMemoryStore,
  createRedisStore,
  RateLimitConfigError,
  rateLimitDirective,
  type RateLimitStore,
} from '../../src';
import { freePort } from '../support/processes';
import { closeClients, connectRedis, keysUnder, uniquePrefix } from '../support/redis';
import { codes, limitedSchema, run } from '../support/schema';

afterAll(closeClients);

const SDL = `
  type Query { ping: String }
  type Mutation {
    submit: Boolean @rateLimit(action: "submit", window: 60, limit: 3)
    quick: Boolean @rateLimit(action: "quick", window: 1, limit: 2)
    profile: Profile! @rateLimit(action: "profile", window: 60, limit: 1)
  }
  type Profile { name: String! }
`;

function counting() {
  const calls = { submit: 0, quick: 0 };
  const resolvers = {
    Mutation: {
      submit: () => ++calls.submit > 0,
      quick: () => ++calls.quick > 0,
      // profile has no resolver of its own: the default field resolver reads the root value
    },
  };
  return { calls, resolvers };
}

async function redisSetup() {
  const client = await connectRedis();
  const prefix = uniquePrefix();
  return { client, prefix, store: createRedisStore({ client, prefix }) };
}

const team = (id: string) => ({ team: { id } });

test('aliases in one operation each count: exactly `limit` succeed', async () => {
  const { store, client, prefix } = await redisSetup();
  const { calls, resolvers } = counting();
  const schema = limitedSchema(SDL, resolvers, { store });
  const result = await run(
    schema,
    'mutation { a: submit b: submit c: submit d: submit e: submit f: submit }',
    team('t1'),
  );
  const data = result.data ?? {};
  expect(Object.values(data).filter((v) => v === true)).toHaveLength(3);
  expect(codes(result)).toEqual(['RATE_LIMITED', 'RATE_LIMITED', 'RATE_LIMITED']);
  expect(calls.submit).toBe(3);
  expect(await keysUnder(client, prefix)).toHaveLength(1);
});

test('RATE_LIMITED carries action, limit, window and a whole retryAfter >= 1', async () => {
  const { store } = await redisSetup();
  const schema = limitedSchema(SDL, counting().resolvers, { store });
  await run(schema, 'mutation { a: submit b: submit c: submit }', team('t1'));
  const result = await run(schema, 'mutation { submit }', team('t1'));
  const ext = result.errors?.[0]?.extensions;
  expect(ext).toMatchObject({ code: 'RATE_LIMITED', action: 'submit', limit: 3, window: 60 });
  expect(Number.isInteger(ext?.retryAfter)).toBe(true);
  expect(ext?.retryAfter).toBeGreaterThanOrEqual(59);
  expect(ext?.retryAfter).toBeLessThanOrEqual(60);
});

test('identities never share a counter', async () => {
  const { store } = await redisSetup();
  const schema = limitedSchema(SDL, counting().resolvers, { store });
  await run(schema, 'mutation { a: submit b: submit c: submit d: submit }', team('t1'));
  const other = await run(schema, 'mutation { a: submit b: submit c: submit }', team('t2'));
  expect(other.errors).toBeUndefined();
});

test('a field with no resolver of its own is limited through the default resolver', async () => {
  const { store } = await redisSetup();
  const schema = limitedSchema(SDL, {}, { store });

  const root = { profile: { name: 'ok' } };
  const first = await graphql({
    schema,
    source: 'mutation { profile { name } }',
    rootValue: root,
    contextValue: team('t1'),
  });
  expect(first.data).toEqual({ profile: { name: 'ok' } });
  const second = await graphql({
    schema,
    source: 'mutation { profile { name } }',
    rootValue: root,
    contextValue: team('t1'),
  });
  expect(codes(second)).toEqual(['RATE_LIMITED']);
});

test('the budget comes back after the window, and every key has a TTL', async () => {
  const { store, client, prefix } = await redisSetup();
  const { calls, resolvers } = counting();
  const schema = limitedSchema(SDL, resolvers, { store });
  const first = await run(schema, 'mutation { a: quick b: quick c: quick }', team('t1'));
  expect(codes(first)).toEqual(['RATE_LIMITED']);
  const retryAfter = first.errors?.[0]?.extensions?.retryAfter as number;
  expect(retryAfter).toBe(1);

  const keys = await keysUnder(client, prefix);
  expect(keys).toHaveLength(1);
  for (const key of keys) {
    const ttl = await client.pttl(key);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(1000);
  }

  await new Promise((r) => setTimeout(r, retryAfter * 1000 + 100));
  const again = await run(schema, 'mutation { a: quick b: quick c: quick }', team('t1'));
  expect(codes(again)).toEqual(['RATE_LIMITED']);
  expect(calls.quick).toBe(4);
});

describe('no identity: UNAUTHENTICATED and nothing counted', () => {
  test.each([
    ['no team in the context', {}],
    ['a null id', { team: { id: null } }],
    ['an empty id', { team: { id: '' } }],
  ])('%s', async (_, context) => {
    const { store, client, prefix } = await redisSetup();
    const { calls, resolvers } = counting();
    const schema = limitedSchema(SDL, resolvers, { store });
    const result = await run(schema, 'mutation { submit }', context);
    expect(codes(result)).toEqual(['UNAUTHENTICATED']);
    expect(calls.submit).toBe(0);
    expect(await keysUnder(client, prefix)).toEqual([]);
  });

  test('a custom identify that yields nothing', async () => {
    const { store, client, prefix } = await redisSetup();
    const schema = limitedSchema(SDL, counting().resolvers, { store, identify: () => undefined });
    expect(codes(await run(schema, 'mutation { submit }', team('t1')))).toEqual([
      'UNAUTHENTICATED',
    ]);
    expect(await keysUnder(client, prefix)).toEqual([]);
  });
});

test('a custom identify counts per what it returns', async () => {
  const store = createMemoryStore();
  const schema = limitedSchema(SDL, counting().resolvers, {
    store,
    identify: (ctx: { ip: string }) => ctx.ip,
  });
  await run(schema, 'mutation { a: submit b: submit c: submit }', { ip: '10.0.0.1' });
  expect(codes(await run(schema, 'mutation { submit }', { ip: '10.0.0.1' }))).toEqual([
    'RATE_LIMITED',
  ]);
  expect(codes(await run(schema, 'mutation { submit }', { ip: '10.0.0.2' }))).toEqual([]);
});

/** The cause a server's logs see: the located field error wraps the library's, which keeps it. */
const causeOf = (result: ExecutionResult): Error =>
  (result.errors?.[0]?.originalError as GraphQLError | undefined)?.originalError ?? new Error();

describe('what identify returns', () => {
  test('a Promise is awaited: async identities never share a counter', async () => {
    const { store, client, prefix } = await redisSetup();
    const schema = limitedSchema(SDL, counting().resolvers, {
      store,
      identify: async (ctx: { user: string }) => ctx.user,
    });
    await run(schema, 'mutation { a: submit b: submit c: submit }', { user: 'alice' });
    expect(codes(await run(schema, 'mutation { submit }', { user: 'alice' }))).toEqual([
      'RATE_LIMITED',
    ]);
    expect(codes(await run(schema, 'mutation { submit }', { user: 'bob' }))).toEqual([]);
    expect((await keysUnder(client, prefix)).sort()).toEqual(
      [`${prefix}{alice}:submit:f60`, `${prefix}{bob}:submit:f60`].sort(),
    );
  });

  test('a Promise of nothing is UNAUTHENTICATED', async () => {
    const { store, client, prefix } = await redisSetup();
    const schema = limitedSchema(SDL, counting().resolvers, {
      store,
      identify: async () => null,
    });
    expect(codes(await run(schema, 'mutation { submit }'))).toEqual(['UNAUTHENTICATED']);
    expect(await keysUnder(client, prefix)).toEqual([]);
  });

  test.each([
    ['an object', { id: 1 }],
    ['an array', ['a']],
    ['a boolean', true],
    ['NaN', NaN],
    ['Infinity', Infinity],
    ['a Promise of an object', Promise.resolve({})],
  ])('%s fails the field, not as RATE_LIMITED, and counts nothing', async (_, value) => {
    const { store, client, prefix } = await redisSetup();
    const { calls, resolvers } = counting();
    const schema = limitedSchema(SDL, resolvers, { store, identify: () => value as never });
    const result = await run(schema, 'mutation { submit }', team('t'));
    expect(codes(result)).toEqual(['INTERNAL_SERVER_ERROR']);
    expect(causeOf(result).message).toMatch(/identify returned/);
    expect(calls.submit).toBe(0);
    expect(await keysUnder(client, prefix)).toEqual([]);
  });

  test('an object from identify or a source: the message names which, and the type, never the value', async () => {
    const { store } = await redisSetup();
    const secret = () => ({ token: 'secret-token-1' }) as never;
    const sdl = `type Query { ping: String }
      type Mutation {
        submit: Boolean @rateLimit(action: "submit", window: 60, limit: 3)
        invite: Boolean @rateLimit(action: "invite", window: 60, limit: 3, by: "team")
      }`;
    const schema = limitedSchema(
      sdl,
      { Mutation: { submit: () => true, invite: () => true } },
      {
        store,
        identify: secret,
        identities: { team: secret },
      },
    );
    const must = 'returned an object; it must return a non-empty string or a finite number';
    const submit = await run(schema, 'mutation { submit }', team('t'));
    expect(submit.errors?.[0]?.message).toBe(
      `Rate limit identity could not be determined: identify ${must} (or null/undefined for nobody)`,
    );
    const invite = await run(schema, 'mutation { invite }', team('t'));
    expect(invite.errors?.[0]?.message).toMatch(`identities.team (by: "team") ${must}`);
    expect(JSON.stringify([submit, invite])).not.toMatch(/secret-token/);
  });

  test.each([
    [
      'throws',
      () => {
        throw new Error('identify failed: DB at /srv/app/secret.db user=admin');
      },
    ],
    [
      'rejects',
      () => Promise.reject(new Error('identify failed: DB at /srv/app/secret.db user=admin')),
    ],
  ])(
    'an identify that %s answers a generic error and keeps the cause for logs',
    async (_, identify) => {
      const { store, client, prefix } = await redisSetup();
      const schema = limitedSchema(SDL, counting().resolvers, { store, identify });
      const result = await run(schema, 'mutation { submit }', team('t'));
      expect(codes(result)).toEqual(['INTERNAL_SERVER_ERROR']);
      expect(JSON.stringify(result)).not.toMatch(/secret|admin/);
      expect(causeOf(result).message).toMatch(/secret\.db/);
      expect(await keysUnder(client, prefix)).toEqual([]);
    },
  );
});

describe('a bad directive fails at schema build, naming the field and the argument', () => {
  test.each([
    ['limit: 0', 'window: 60, limit: 0', /Mutation\.go: @rateLimit\(limit: 0\)/],
    ['window: 0', 'window: 0, limit: 3', /Mutation\.go: @rateLimit\(window: 0\)/],
    ['negative window', 'window: -5, limit: 3', /Mutation\.go: @rateLimit\(window: -5\)/],
    ['cost: 0', 'window: 60, limit: 3, cost: 0', /Mutation\.go: @rateLimit\(cost: 0\)/],
    [
      'cost above limit',
      'window: 60, limit: 3, cost: 5',
      /Mutation\.go: @rateLimit\(cost: 5\) exceeds limit 3/,
    ],
    [
      'a token bucket faster than a token per microsecond',
      'window: 1, limit: 2000000, algorithm: TOKEN_BUCKET',
      /Mutation\.go: @rateLimit\(limit: 2000000\) refills over 1000000 tokens per second/,
    ],
  ])('%s', (_, args, message) => {
    const { typeDefs, transformer } = rateLimitDirective({ store: createMemoryStore() });
    const schema = makeExecutableSchema({
      typeDefs: [
        typeDefs,
        `type Query { a: Int } type Mutation { go: Int @rateLimit(action: "x", ${args}) }`,
      ],
    });
    expect(() => transformer(schema)).toThrow(RateLimitConfigError);
    expect(() => transformer(schema)).toThrow(message);
  });

  test('empty action', () => {
    const { typeDefs, transformer } = rateLimitDirective({ store: createMemoryStore() });
    const schema = makeExecutableSchema({
      typeDefs: [
        typeDefs,
        'type Query { a: Int } type Mutation { go: Int @rateLimit(action: "", window: 1, limit: 1) }',
      ],
    });
    expect(() => transformer(schema)).toThrow(/Mutation\.go: @rateLimit\(action: ""\)/);
  });

  test('an argument of the wrong type', () => {
    const { typeDefs, transformer } = rateLimitDirective({ store: createMemoryStore() });
    const schema = makeExecutableSchema({
      typeDefs: [
        typeDefs,
        'type Query { go: Int @rateLimit(action: "x", window: "60", limit: 3) }',
      ],
    });
    expect(() => transformer(schema)).toThrow(RateLimitConfigError);
    expect(() => transformer(schema)).toThrow(/Query\.go: .*window/);
  });

  test('bad options throw at construction', () => {
    const store = createMemoryStore();
    expect(() => rateLimitDirective({ store, onStoreError: 'maybe' as never })).toThrow(
      /onStoreError/,
    );
    expect(() => rateLimitDirective({ store, timeoutMs: 0 })).toThrow(/timeoutMs/);
    expect(() => rateLimitDirective({ store, name: 'rate-limit' })).toThrow(/name/);
    expect(() => rateLimitDirective({ store: {} as RateLimitStore })).toThrow(/store/);
    for (const option of ['exposeLimits', 'status429', 'dryRun'] as const) {
      const build = (): unknown => rateLimitDirective({ store, [option]: 'yes' as never });
      expect(build).toThrow(RateLimitConfigError);
      expect(build).toThrow(new RegExp(option));
    }
  });
});

test('a throwing onDecision warns once per directive, so one noisy hook never silences another', async () => {
  const emitWarning = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
  try {
    const schemas = ['first', 'second'].map((name) =>
      limitedSchema(SDL, counting().resolvers, {
        store: createMemoryStore(),
        onDecision: () => {
          throw new Error(`${name} hook`);
        },
      }),
    );
    for (const schema of schemas) {
      for (let i = 0; i < 2; i++) {
        expect(codes(await run(schema, 'mutation { submit }', team('t')))).toEqual([]);
      }
    }
    expect(emitWarning.mock.calls.map(([message]) => String(message))).toEqual([
      expect.stringMatching(/onDecision threw.*first hook/),
      expect.stringMatching(/onDecision threw.*second hook/),
    ]);
  } finally {
    emitWarning.mockRestore();
  }
});

test('the directive name can be changed', async () => {
  const store = createMemoryStore();
  const schema = limitedSchema(
    'type Query { a: Int } type Mutation { go: Boolean! @throttle(action: "go", window: 60, limit: 1) }',
    { Mutation: { go: () => true } },
    { store, name: 'throttle' },
  );
  expect(codes(await run(schema, 'mutation { a: go b: go }', team('t1')))).toEqual([
    'RATE_LIMITED',
  ]);
});

describe('transformer applied twice', () => {
  test('counts every hit once', async () => {
    const store = createMemoryStore();
    const { typeDefs, transformer, peek } = rateLimitDirective({ store });
    const once = transformer(
      makeExecutableSchema({ typeDefs: [typeDefs, SDL], resolvers: counting().resolvers }),
    );
    const twice = transformer(once);
    expect(codes(await run(twice, 'mutation { submit }', team('t')))).toEqual([]);
    expect(await peek({ identity: 't', action: 'submit' })).toMatchObject([{ remaining: 2 }]);
    const result = await run(twice, 'mutation { a: submit b: submit c: submit }', team('t'));
    expect(codes(result)).toEqual(['RATE_LIMITED']);
  });

  test('by another directive of the same name is refused, naming the field', () => {
    const first = rateLimitDirective({ store: createMemoryStore() });
    const second = rateLimitDirective({ store: createMemoryStore() });
    const schema = first.transformer(
      makeExecutableSchema({ typeDefs: [first.typeDefs, SDL], resolvers: counting().resolvers }),
    );
    expect(() => second.transformer(schema)).toThrow(RateLimitConfigError);
    expect(() => second.transformer(schema)).toThrow(
      /Mutation\.submit: @rateLimit was already applied/,
    );
  });

  test('directives of two names each count their own limit', async () => {
    const quota = rateLimitDirective({ store: createMemoryStore(), name: 'quota' });
    const limit = rateLimitDirective({ store: createMemoryStore() });
    const schema = quota.transformer(
      limit.transformer(
        makeExecutableSchema({
          typeDefs: [
            limit.typeDefs,
            'directive @quota(action: String!, window: Int!, limit: Int!) on FIELD_DEFINITION',
            `type Query { a: Int }
             type Mutation {
               go: Boolean @rateLimit(action: "go", window: 60, limit: 3) @quota(action: "q", window: 60, limit: 1)
             }`,
          ],
          resolvers: { Mutation: { go: () => true } },
        }),
      ),
    );
    expect(codes(await run(schema, 'mutation { a: go b: go }', team('t')))).toEqual([
      'RATE_LIMITED',
    ]);
    // quota, applied last, decides first: its block leaves @rateLimit's counter alone
    expect(await limit.peek({ identity: 't', action: 'go' })).toMatchObject([{ remaining: 2 }]);
  });
});

test('transformer leaves the input schema untouched', async () => {
  const { typeDefs, transformer } = rateLimitDirective({ store: createMemoryStore() });
  const input = makeExecutableSchema({
    typeDefs: [typeDefs, SDL],
    resolvers: counting().resolvers,
  });
  transformer(input);

  const result = await graphql({
    schema: input,
    source: 'mutation { a: submit b: submit c: submit d: submit }',
    contextValue: team('t1'),
  });
  expect(result.errors).toBeUndefined();
});

describe('a store that cannot answer', () => {
  async function deadRedisStore() {
    const port = await freePort();

    const client = new Redis(port, '127.0.0.1', {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    client.on('error', () => undefined);
    return { client, store: createRedisStore({ client, prefix: uniquePrefix() }) };
  }

  test("'deny' (the default) answers RATE_LIMIT_UNAVAILABLE and skips the resolver", async () => {
    const { client, store } = await deadRedisStore();
    const { calls, resolvers } = counting();
    const schema = limitedSchema(SDL, resolvers, { store });
    const result = await run(schema, 'mutation { submit }', team('t1'));
    expect(codes(result)).toEqual(['RATE_LIMIT_UNAVAILABLE']);
    expect(calls.submit).toBe(0);
    client.disconnect();
  });

  test("'allow' runs the resolver", async () => {
    const { client, store } = await deadRedisStore();
    const { calls, resolvers } = counting();
    const schema = limitedSchema(SDL, resolvers, { store, onStoreError: 'allow' });
    const result = await run(schema, 'mutation { submit }', team('t1'));
    expect(result.errors).toBeUndefined();
    expect(calls.submit).toBe(1);
    client.disconnect();
  });

  test('a store slower than timeoutMs is cut off with RATE_LIMIT_UNAVAILABLE', async () => {
    const never: RateLimitStore = { hit: () => new Promise(() => undefined) };
    const schema = limitedSchema(SDL, counting().resolvers, { store: never, timeoutMs: 50 });
    const result = await run(schema, 'mutation { submit }', team('t1'));
    expect(codes(result)).toEqual(['RATE_LIMIT_UNAVAILABLE']);
    expect((result.errors?.[0]?.originalError as GraphQLError).originalError?.name).toBe(
      'StoreTimeoutError',
    );
  });
});
