import { randomUUID } from 'node:crypto';

import { ApolloServer } from '@apollo/server';
import { makeExecutableSchema } from '@graphql-tools/schema';
import Fastify from 'fastify';
import { graphql } from 'graphql';
import { createYoga } from 'graphql-yoga';
import mercurius from 'mercurius';

import * as lib from '../../src';
import { BUDGET_UNENFORCED_WARNED } from '../../src/budget/unenforced';
import { mercuriusRateLimit } from '../../src/mercurius';
import { closeClients, connectRedis, uniquePrefix } from '../support/redis';

/*
 * A budget is applied by the server plugins alone: on a server without one, it charges nothing.
 * The first time a limited field resolves with no plugin having ever brought the budget an
 * operation, the process is told so, once, naming each server's plugin. Each test starts as a
 * process that was told nothing.
 */

const SDL = /* GraphQL */ `
  type Query {
    items(first: Int!): [Item!]! @listSize(slicingArguments: ["first"])
    limited: Int @rateLimit(action: "lim", window: 60, limit: 50)
  }
  type Item {
    id: ID!
  }
`;
const QUERY = '{ limited items(first: 10) { id } }';
const BUDGET = { limit: 20, window: 60 };

let warn: jest.SpyInstance;
beforeEach(() => {
  delete (process as { [BUDGET_UNENFORCED_WARNED]?: true })[BUDGET_UNENFORCED_WARNED];
  warn = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
});
afterEach(() => warn.mockRestore());
afterAll(closeClients);

/** The schema served by each server, with a directive and a budget of its own. */
async function serve() {
  const runs = { limited: 0 };
  const directive = lib.rateLimitDirective<{ team?: string }>({
    store: lib.createRedisStore({ client: await connectRedis(), prefix: uniquePrefix() }),
    identify: (context) => context.team,
    budget: BUDGET,
    timeoutMs: 5_000,
  });
  const resolvers = {
    Query: {
      limited: () => ++runs.limited,
      items: (_: unknown, a: { first: number }) =>
        Array.from({ length: a.first }, (_, i) => ({ id: String(i) })),
    },
  };
  const schema = directive.transformer(
    makeExecutableSchema({ typeDefs: [directive.typeDefs, SDL], resolvers }),
  );
  return {
    directive,
    runs,
    /** The budget's points left for `team`. */
    left: async (team: string) =>
      (await directive.peek({ identity: team, action: 'budget' }))[0]?.remaining,
    async apollo(withPlugin: boolean, team: string) {
      const server = new ApolloServer<{ team?: string }>({
        schema,
        plugins: withPlugin ? [directive.plugin] : [],
      });
      await server.start();
      try {
        const answers = [];
        for (let i = 0; i < 3; i++) {
          const r = await server.executeOperation({ query: QUERY }, { contextValue: { team } });
          answers.push(r.body.kind === 'single' ? r.body.singleResult : undefined);
        }
        return answers;
      } finally {
        await server.stop();
      }
    },
    async yoga(withPlugin: boolean, team: string) {
      const yoga = createYoga<{ team?: string }>({
        schema,
        plugins: withPlugin ? [directive.envelopPlugin] : [],
        logging: false,
        context: () => ({ team }),
      });
      const answers = [];
      for (let i = 0; i < 3; i++) {
        const response = await yoga.fetch('http://localhost/graphql', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ query: QUERY }),
        });
        answers.push((await response.json()) as { data?: unknown; errors?: unknown[] });
      }
      return answers;
    },
    async mercurius(withPlugin: boolean, team: string) {
      const app = Fastify();
      // the schema the transformer made: with the plugin forgotten, fields are wrapped still
      await app.register(mercurius, { schema, cache: false, context: () => ({ team }) });
      if (withPlugin) await app.register(mercuriusRateLimit, { directive });
      await app.ready();
      try {
        const answers = [];
        for (let i = 0; i < 3; i++) {
          const r = await app.inject({
            method: 'POST',
            url: '/graphql',
            payload: { query: QUERY },
          });
          answers.push(r.json<{ data?: unknown; errors?: unknown[] }>());
        }
        return answers;
      } finally {
        await app.close();
      }
    },
    /** graphql-js alone: what a server that has no plugin interface runs. */
    bare: (team: string) => graphql({ schema, source: QUERY, contextValue: { team } }),
  };
}

const unenforced = (code: string) =>
  warn.mock.calls.filter(
    ([, options]) => (options as { code?: string } | undefined)?.code === code,
  );

describe.each(['apollo', 'yoga', 'mercurius'] as const)('%s', (host) => {
  test('without its plugin: 3 operations priced 10 pass a budget of 20, and the process is told once', async () => {
    const server = await serve();
    const team = `team-${randomUUID()}`;
    const answers = await server[host](false, team);

    // nothing charges the budget: every operation runs
    expect(answers.map((a) => a?.data)).toEqual(
      Array(3).fill({ limited: expect.any(Number), items: expect.arrayContaining([{ id: '9' }]) }),
    );
    expect(await server.left(team)).toBe(BUDGET.limit);
    const warnings = unenforced(lib.WARNING_CODES.BUDGET_UNENFORCED);
    expect(lib.WARNING_CODES.BUDGET_UNENFORCED).toBe('GRAPHQL_RATE_LIMIT_BUDGET_UNENFORCED');
    expect(warnings).toHaveLength(1);
    const message = String(warnings[0]?.[0]);
    expect(message).toContain("Add the directive's `plugin` to Apollo Server's `plugins`");
    expect(message).toContain('`envelopPlugin`');
    expect(message).toContain('`mercuriusRateLimit`');
    // and stays told: a second server in the same process says nothing more
    await server.bare(team);
    expect(unenforced(lib.WARNING_CODES.BUDGET_UNENFORCED)).toHaveLength(1);
  });

  test('with its plugin: the budget charges, and nothing is said', async () => {
    const server = await serve();
    const team = `team-${randomUUID()}`;
    const answers = await server[host](true, team);
    expect(answers.filter((a) => a?.errors === undefined)).toHaveLength(2);
    expect(server.runs.limited).toBe(2);
    expect(unenforced(lib.WARNING_CODES.BUDGET_UNENFORCED)).toHaveLength(0);
  });
});
