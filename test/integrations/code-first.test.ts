import { randomUUID } from 'node:crypto';

import { ApolloServer } from '@apollo/server';
import SchemaBuilder from '@pothos/core';
import DirectivesPlugin from '@pothos/plugin-directives';
import {
  buildSchema,
  graphql,
  GraphQLBoolean,
  GraphQLObjectType,
  GraphQLSchema,
  GraphQLString,
} from 'graphql';

import { RateLimitConfigError, rateLimitDirective, type RateLimitStore } from '../../src';
import { releaseTogether } from '../support/barrier';
import { closeClients, connectRedis, uniquePrefix } from '../support/redis';
import { openedRedisStore } from '../support/stores';

/*
 * Code-first schemas carry directives in `extensions.directives` (and, for Pothos, in AST nodes
 * it makes up): limited exactly like SDL ones, with the same guard.
 */

let store: RateLimitStore;
// no test here is about the store's deadline: a loaded machine's slow moment fails none
const timeoutMs = 5_000;
beforeAll(async () => {
  store = await openedRedisStore({ client: await connectRedis(), prefix: uniquePrefix() });
});
afterAll(closeClients);

/** The `@rateLimit` arguments as Pothos' directives plugin types them. */
type RateLimitArgs = {
  action: string;
  window: number;
  limit: number;
  algorithm?: 'FIXED_WINDOW' | 'SLIDING_WINDOW' | 'TOKEN_BUCKET';
};

function pothosSchema(options: { unordered?: boolean } = {}) {
  const builder = new SchemaBuilder<{
    Directives: { rateLimit: { locations: 'FIELD_DEFINITION' | 'OBJECT'; args: RateLimitArgs } };
  }>({
    plugins: [DirectivesPlugin],
    directives: { useGraphQLToolsUnorderedDirectives: options.unordered ?? false },
  });
  const Hint = builder.objectRef<{ id: string }>('Hint').implement({
    directives: [{ name: 'rateLimit', args: { action: 'hint', window: 60, limit: 2 } }],
    fields: (t) => ({ text: t.string({ resolve: ({ id }) => `hint ${id}` }) }),
  });
  builder.queryType({
    fields: (t) => ({
      hint: t.field({ type: Hint, resolve: () => ({ id: '1' }) }),
      ping: t.boolean({ resolve: () => true }),
    }),
  });
  builder.mutationType({
    fields: (t) => ({
      submit: t.boolean({
        directives: [
          {
            name: 'rateLimit',
            args: { action: 'submit', window: 60, limit: 3, algorithm: 'SLIDING_WINDOW' },
          },
        ],
        resolve: () => true,
      }),
    }),
  });
  return builder;
}

/** The same schema written by hand with graphql-js, its directives in `extensions` only. */
function handBuiltSchema(): GraphQLSchema {
  const Hint = new GraphQLObjectType({
    name: 'Hint',
    // a single directive may be written as one object instead of a list
    extensions: { directives: { rateLimit: { action: 'hint', window: 60, limit: 2 } } },
    fields: { text: { type: GraphQLString, resolve: ({ id }: { id: string }) => `hint ${id}` } },
  });
  return new GraphQLSchema({
    query: new GraphQLObjectType({
      name: 'Query',
      fields: {
        hint: { type: Hint, resolve: () => ({ id: '1' }) },
        ping: { type: GraphQLBoolean, resolve: () => true },
      },
    }),
    mutation: new GraphQLObjectType({
      name: 'Mutation',
      fields: {
        submit: {
          type: GraphQLBoolean,
          resolve: () => true,
          extensions: {
            directives: {
              rateLimit: [{ action: 'submit', window: 60, limit: 3, algorithm: 'SLIDING_WINDOW' }],
            },
          },
        },
      },
    }),
  });
}

/**
 * The same schema with its directives as a list of `{ name, args }` and no AST nodes, the shape
 * graphql-compose writes (and Pothos, beside the AST nodes it makes up).
 */
function listedSchema(): GraphQLSchema {
  const Hint = new GraphQLObjectType({
    name: 'Hint',
    extensions: {
      directives: [{ name: 'rateLimit', args: { action: 'hint', window: 60, limit: 2 } }],
    },
    fields: { text: { type: GraphQLString, resolve: ({ id }: { id: string }) => `hint ${id}` } },
  });
  return new GraphQLSchema({
    query: new GraphQLObjectType({
      name: 'Query',
      fields: {
        hint: { type: Hint, resolve: () => ({ id: '1' }) },
        ping: { type: GraphQLBoolean, resolve: () => true },
      },
    }),
    mutation: new GraphQLObjectType({
      name: 'Mutation',
      fields: {
        submit: {
          type: GraphQLBoolean,
          resolve: () => true,
          extensions: {
            directives: [
              { name: 'deprecatedNote', args: {} },
              {
                name: 'rateLimit',
                args: { action: 'submit', window: 60, limit: 3, algorithm: 'SLIDING_WINDOW' },
              },
            ],
          },
        },
      },
    }),
  });
}

const styles: [string, () => GraphQLSchema][] = [
  ['Pothos with its directives plugin', () => pothosSchema().toSchema()],
  [
    'Pothos writing graphql-tools keyed extensions',
    () => pothosSchema({ unordered: true }).toSchema(),
  ],
  [
    'Pothos with the directive definitions in the schema',
    () => {
      const { typeDefs } = rateLimitDirective({ store, timeoutMs });
      return pothosSchema().toSchema({ directives: buildSchema(typeDefs).getDirectives() });
    },
  ],
  ['graphql-js by hand, directives in extensions', handBuiltSchema],
  ['graphql-js by hand, directives as a list of { name, args } (graphql-compose)', listedSchema],
];

describe.each(styles)('%s', (_style, build) => {
  let schema: GraphQLSchema;
  let plugin: ReturnType<typeof rateLimitDirective>['plugin'];
  beforeAll(() => {
    const directive = rateLimitDirective({ store, timeoutMs });
    schema = directive.transformer(build());
    plugin = directive.plugin;
  });
  const run = async (source: string, team: string) =>
    graphql({ schema, source, contextValue: { team: { id: team } } });

  test('a field limit: exactly 3 of 10 simultaneous hits pass', async () => {
    const team = randomUUID();
    const results = await releaseTogether(10, async () => () => run('mutation { submit }', team));
    expect(results.filter((r) => r.data?.submit === true)).toHaveLength(3);
    const codes = results.flatMap((r) => (r.errors ?? []).map((e) => e.extensions.code));
    expect(codes).toEqual(Array.from({ length: 7 }, () => 'RATE_LIMITED'));
  });

  test('a limit on an object type applies to its fields', async () => {
    const team = randomUUID();
    const results = [];
    for (let i = 0; i < 3; i++) results.push(await run('{ hint { text } }', team));
    expect(results.map((r) => r.errors?.[0]?.extensions.code ?? r.data?.hint)).toEqual([
      { text: 'hint 1' },
      { text: 'hint 1' },
      'RATE_LIMITED',
    ]);
    expect((await run('{ ping }', team)).data).toEqual({ ping: true });
  });

  test('the plugin refuses the schema when it skipped the transformer', async () => {
    const server = new ApolloServer({ schema: build(), plugins: [plugin] });
    const refused = await server.start().then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(RateLimitConfigError);
    expect(String(refused)).toMatch(/Hint\.text/);
    expect(String(refused)).toMatch(/Mutation\.submit/);
  });
});

test('Pothos keyed extensions and the directive definitions together read each directive twice, and the transformer says so', () => {
  const { typeDefs, transformer } = rateLimitDirective({ store, timeoutMs });
  const schema = pothosSchema({ unordered: true }).toSchema({
    directives: buildSchema(typeDefs).getDirectives(),
  });
  expect(() => transformer(schema)).toThrow(RateLimitConfigError);
  expect(() => transformer(schema)).toThrow(
    /(Hint\.text|Mutation\.submit): two @rateLimit share action/,
  );
});

describe('a @rateLimit the transformer cannot read fails the build, naming the field', () => {
  const withDirectives = (directives: unknown) =>
    new GraphQLSchema({
      query: new GraphQLObjectType({
        name: 'Query',
        fields: { search: { type: GraphQLBoolean, extensions: { directives } } },
      }),
    });
  test.each([
    ['a list entry whose args are not an object', [{ name: 'rateLimit', args: 'limit 3' }]],
    ['a list entry that is not { name, args }', [{ name: 'rateLimit', args: {} }, 'rateLimit']],
    ['a keyed entry that is not an object', { rateLimit: 3 }],
    [
      'a keyed list holding a non-object',
      { rateLimit: [{ action: 'a', window: 60, limit: 1 }, null] },
    ],
    ['a list entry without arguments', [{ name: 'rateLimit' }]],
  ])('%s', (_what, directives) => {
    const { transformer } = rateLimitDirective({ store, timeoutMs });
    const build = () => transformer(withDirectives(directives));
    expect(build).toThrow(RateLimitConfigError);
    expect(build).toThrow(/^Query\.search: @rateLimit/);
  });

  test('a @rateLimit on an interface field, which never resolves', () => {
    const { typeDefs, transformer } = rateLimitDirective({ store, timeoutMs });
    const schema = buildSchema(`${typeDefs}
      interface Node { id: ID @rateLimit(action: "node", window: 60, limit: 1) }
      type User implements Node { id: ID }
      type Query { user: User }`);
    expect(() => transformer(schema)).toThrow(
      /Node\.id: @rateLimit on an interface limits nothing/,
    );
  });
});
