import { randomUUID } from 'node:crypto';
import { join } from 'node:path';

import { ApolloServer } from '@apollo/server';
import { envelop, useEngine, useSchema } from '@envelop/core';
import { makeExecutableSchema } from '@graphql-tools/schema';
import { execute, parse, specifiedRules, validate, type GraphQLSchema } from 'graphql';

import { RateLimitConfigError, rateLimitDirective } from '../../src';
import { errorCodes, postGraphQL } from '../support/http';
import { startProcess, type Child } from '../support/processes';
import { closeClients, connectRedis, redisUrl, uniquePrefix } from '../support/redis';
import { openedRedisStore } from '../support/stores';

/*
 * A field the transformer wrapped whose resolver is replaced after the transform (a
 * `field.resolve` assigned, Mercurius' `defineResolvers` or `defineLoaders` after the plugin)
 * never runs: the server refuses to start, or refuses each operation, naming the field. A host's
 * own instrumentation that wraps every resolver in place (Apollo Server's, for a plugin with
 * `willResolveField`) keeps the limit exact.
 */

afterAll(closeClients);

const SDL = `type Query { ok: Boolean }
  type Mutation { submitFlag: Boolean @rateLimit(action: "submit", window: 60, limit: 2) }`;
const REPLACED = /Mutation\.submitFlag: its resolver was replaced after the transformer/;

async function limited(): Promise<{ schema: GraphQLSchema; plugins: ReturnType<typeof plugins> }> {
  const store = await openedRedisStore({ client: await connectRedis(), prefix: uniquePrefix() });
  const directive = rateLimitDirective<{ team: string }>({ store, identify: (c) => c.team });
  const schema = directive.transformer(
    makeExecutableSchema({
      typeDefs: [directive.typeDefs, SDL],
      resolvers: { Mutation: { submitFlag: () => true } },
    }),
  );
  return { schema, plugins: plugins(directive) };
}
const plugins = (d: ReturnType<typeof rateLimitDirective>) => ({
  apollo: d.plugin,
  envelop: d.envelopPlugin,
});

/** Replaces the field's resolver in place, as a late `defineResolvers` does. */
function replace(schema: GraphQLSchema, calls: string[]): void {
  const field = schema.getMutationType()?.getFields().submitFlag;
  if (!field) throw new Error('Mutation.submitFlag');
  field.resolve = function lateResolver() {
    calls.push('ran');
    return true;
  };
}

describe('Apollo Server', () => {
  const run = async (server: ApolloServer<{ team: string }>, team: string) => {
    const response = await server.executeOperation(
      { query: 'mutation { submitFlag }' },
      { contextValue: { team } },
    );
    if (response.body.kind !== 'single') throw new Error('a single result');
    return response.body.singleResult;
  };

  test('a resolver replaced after start: every operation refused, naming the field', async () => {
    const { schema, plugins } = await limited();
    const server = new ApolloServer<{ team: string }>({ schema, plugins: [plugins.apollo] });
    await server.start();
    const calls: string[] = [];
    replace(schema, calls);
    const team = randomUUID();
    const results = [];
    for (let i = 0; i < 4; i++) results.push(await run(server, team));
    await server.stop();
    expect(calls).toEqual([]);
    for (const r of results) {
      expect(r.data ?? null).toBeNull();
      expect(r.errors?.[0]?.message).toMatch(REPLACED);
    }
    expect(results[0]?.errors?.[0]?.message).toMatch(/it is now a function named "lateResolver"/);
  });

  test('a resolver replaced before start: the server does not start', async () => {
    const { schema, plugins } = await limited();
    const field = schema.getMutationType()?.getFields().submitFlag;
    if (field) delete field.resolve;
    const server = new ApolloServer<{ team: string }>({ schema, plugins: [plugins.apollo] });
    const started = server.start();
    await expect(started).rejects.toThrow(RateLimitConfigError);
    await expect(started).rejects.toThrow(/it is now no resolver/);
  });

  test("Apollo's own resolver instrumentation (willResolveField): the limit stays exact", async () => {
    const { schema, plugins } = await limited();
    const resolved: string[] = [];
    const tracing = {
      async requestDidStart() {
        return {
          async executionDidStart() {
            return {
              willResolveField({ info }: { info: { fieldName: string } }) {
                resolved.push(info.fieldName);
              },
            };
          },
        };
      },
    };
    const server = new ApolloServer<{ team: string }>({
      schema,
      plugins: [plugins.apollo, tracing],
    });
    await server.start();
    const team = randomUUID();
    const results = [];
    for (let i = 0; i < 4; i++) results.push(await run(server, team));
    await server.stop();
    expect(results.map((r) => r.data?.submitFlag ?? r.errors?.[0]?.extensions?.code)).toEqual([
      true,
      true,
      'RATE_LIMITED',
      'RATE_LIMITED',
    ]);
    expect(resolved).toEqual(Array(4).fill('submitFlag'));
  });
});

test('envelop (Yoga): a resolver replaced after start, every operation refused', async () => {
  const { schema, plugins } = await limited();
  const getEnveloped = envelop({
    plugins: [
      useEngine({ parse, validate, execute, specifiedRules }),
      useSchema(schema),
      plugins.envelop,
    ],
  });
  const calls: string[] = [];
  replace(schema, calls);
  const team = randomUUID();
  const outcomes = [];
  for (let i = 0; i < 4; i++) {
    const { execute: run, schema: served } = getEnveloped();
    const document = parse('mutation { submitFlag }');
    outcomes.push(
      await Promise.resolve()
        .then(() => run({ schema: served, document, contextValue: { team } }))
        .then(
          () => 'ran',
          (error: unknown) => (error instanceof Error ? error.message : String(error)),
        ),
    );
  }
  expect(calls).toEqual([]);
  for (const o of outcomes) expect(o).toMatch(REPLACED);
});

describe.each(['0', '1'])(
  'Mercurius, jit %s: resolvers defined after mercuriusRateLimit',
  (jit) => {
    const SERVER = join(__dirname, '..', '..', 'kit', 'mercurius-server.js');
    const children: Child[] = [];
    afterEach(async () => {
      await Promise.all(children.splice(0).map((c) => c.stop()));
    });
    const start = (late: string) => {
      const env = {
        REDIS_URL: redisUrl(),
        RATE_LIMIT_PREFIX: uniquePrefix(),
        JIT: jit,
        LATE: late,
      };
      const child = startProcess(process.execPath, [SERVER], { env: { ...process.env, ...env } });
      children.push(child);
      return child;
    };

    test.each(['resolvers', 'loaders'])(
      'define%s before ready: it does not start',
      async (late) => {
        const child = start(late);
        const [line] = await child.waitForOutput(/Refused: .*/);
        expect(line).toMatch(REPLACED);
        expect(await child.exited).toEqual({ code: 1, signal: null });
      },
    );

    test('defineResolvers once it runs: 4 of 4 refused, the late resolver never runs', async () => {
      const child = start('running');
      const [, url = ''] = await child.waitForOutput(/Ready at (\S+)/);
      const team = randomUUID();
      const responses = [];
      // jit 1 compiles the query on its second run: both paths are refused
      for (let i = 0; i < 4; i++)
        responses.push(await postGraphQL(url, 'mutation { submitFlag }', team));
      for (const r of responses) {
        expect(r.body.data?.submitFlag ?? null).toBeNull();
        expect(r.body.errors?.[0]?.message).toMatch(REPLACED);
      }
      expect(responses.flatMap(errorCodes)).not.toContain('RATE_LIMITED');
      expect(child.stdout()).not.toContain('ran late');
    });
  },
);
