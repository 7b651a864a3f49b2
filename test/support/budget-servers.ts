import { randomUUID } from 'node:crypto';

import { ApolloServer, HeaderMap } from '@apollo/server';
import { makeExecutableSchema } from '@graphql-tools/schema';
import Fastify from 'fastify';
import { useGraphQlJit } from '@envelop/graphql-jit';
import { createYoga } from 'graphql-yoga';
import mercurius from 'mercurius';

import {
  rateLimitDirective,
  type BudgetOptions,
  type RateLimitDirective,
  type RateLimitDirectiveOptions,
  type RateLimitStore,
} from '../../src';
import { mercuriusRateLimit } from '../../src/mercurius';
import { connectRedis, uniquePrefix } from './redis';
import { openedRedisStore } from './stores';

/*
 * One small schema served with a `budget` by Apollo Server 5, GraphQL Yoga 5 and Mercurius 16,
 * all in-process (Apollo's executeHTTPGraphQLRequest, Yoga's fetch, Fastify's inject), so a test
 * can run the same operations through each plugin and read status, headers and body.
 */

export const BUDGET_SDL = /* GraphQL */ `
  type Query {
    "Returns \`returned\` items, \`first\` by default: what a list that returns fewer looks like."
    items(first: Int!, returned: Int): [Item!]! @listSize(slicingArguments: ["first"])
    "Waits for the test's gate before it returns \`returned\` items."
    gated(first: Int!, returned: Int!): [Item!]! @listSize(slicingArguments: ["first"])
    search(first: Int, last: Int): [Item!]! @listSize(slicingArguments: ["first", "last"])
    heavy: Item @cost(weight: 500)
    limited: Int @rateLimit(action: "lim", window: 60, limit: 5)
    "Throws on a negative \`x\`: a non-null field whose error nulls \`data\`."
    strict(x: Int!): Int!
    "A non-null field of one hit an hour: once it is spent, its refusal nulls \`data\`."
    once: Int! @rateLimit(action: "once", window: 3600, limit: 1)
    "An item whose \`id\` (non-null) throws: its error nulls \`fragile\`, not \`data\`."
    fragile: Item @cost(weight: 20)
    "Returns \`first\` items; \`where\` is an input object, which graphql-jit coerces its own way."
    filtered(first: Int!, where: Where!): [Item!]! @listSize(slicingArguments: ["first"])
  }
  input Where {
    min: Int
  }
  extend type Query {
    "Ten entries, Heavy and Light in turn; the title of each Heavy is Light."
    entries: [Entry!]! @listSize(assumedSize: 10)
  }
  union Entry = Heavy | Light
  type Heavy {
    title: String!
    extra: Int @cost(weight: 80)
  }
  type Light {
    title: String!
  }
  type Item {
    id: ID!
    "Always null (no resolver): lists that nest, for documents built to be hard to price."
    children(first: Int): [Item!] @listSize(slicingArguments: ["first"])
  }
  type Mutation {
    touch: Item
  }
`;

/** How many times each resolver ran. */
export type Runs = Record<
  'items' | 'gated' | 'search' | 'heavy' | 'limited' | 'touch' | 'strict' | 'once' | 'filtered',
  number
>;

export type ServerKind = 'apollo' | 'yoga' | 'mercurius';
export const SERVER_KINDS: readonly ServerKind[] = ['apollo', 'yoga', 'mercurius'];

/** One response, as a client reads it. */
export interface BudgetResponse {
  readonly status: number;
  header(name: string): string | null;
  readonly body: {
    data?: Record<string, unknown> | null;
    errors?: { message: string; extensions?: Record<string, unknown> }[];
    extensions?: Record<string, any>;
  };
}

/** The code of a response's first error, if any. */
export const codeOf = (r: BudgetResponse): unknown => r.body.errors?.[0]?.extensions?.code;

/** A served schema: run an operation as `team` (none: no identity). */
export interface BudgetServer {
  readonly runs: Runs;
  /** The directive's `peek`: the counters the server's limits and budget use. */
  readonly peek: RateLimitDirective['peek'];
  /** The directive's `reset`. */
  readonly reset: RateLimitDirective['reset'];
  /** Held by `gated` until opened. */
  readonly gate: { open(): void };
  run(
    query: string,
    team?: string,
    variables?: Record<string, unknown>,
    operationName?: string,
  ): Promise<BudgetResponse>;
  stop(): Promise<void>;
}

/** How the server executes: `jit` compiles operations with graphql-jit (Yoga: envelop's plugin;
 * Mercurius: `jit: 1`, so an operation's second request takes the compiled path). */
export interface BudgetHost {
  readonly jit?: boolean;
}

/** Serves {@link BUDGET_SDL} with a directive of `options` (identity: the `team` of a request). */
export async function serveBudget(
  kind: ServerKind,
  options: RateLimitDirectiveOptions,
  host: BudgetHost = {},
): Promise<BudgetServer> {
  const runs: Runs = {
    items: 0,
    gated: 0,
    search: 0,
    heavy: 0,
    limited: 0,
    touch: 0,
    strict: 0,
    once: 0,
    filtered: 0,
  };
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  const list = (n: number) => Array.from({ length: n }, (_, i) => ({ id: String(i) }));
  const resolvers = {
    Query: {
      items: (_: unknown, a: { first: number; returned?: number }) => {
        runs.items++;
        return list(a.returned ?? a.first);
      },
      gated: async (_: unknown, a: { returned: number }) => {
        runs.gated++;
        await opened;
        return list(a.returned);
      },
      search: () => (runs.search++, []),
      heavy: () => (runs.heavy++, { id: 'h' }),
      limited: () => ++runs.limited,
      strict: (_: unknown, a: { x: number }) => {
        runs.strict++;
        if (a.x < 0) throw new Error('x must not be negative');
        return a.x;
      },
      once: () => ++runs.once,
      fragile: () => ({ id: 'boom' }),
      entries: () =>
        Array.from({ length: 10 }, (_, i) =>
          i % 2 ? { kind: 'Light', title: 'plain' } : { kind: 'Heavy', title: 'Light', extra: 1 },
        ),
      filtered: (_: unknown, a: { first: number }) => {
        runs.filtered++;
        return list(a.first);
      },
    },
    Item: {
      id: (item: { id: string }) => {
        if (item.id === 'boom') throw new Error('this item cannot be read');
        return item.id;
      },
    },
    Mutation: { touch: () => (runs.touch++, { id: 't' }) },
    Entry: { __resolveType: (entry: { kind: string }) => entry.kind },
  };
  const directive = rateLimitDirective<{ team?: string }>({
    identify: (context) => context.team,
    ...options,
  });
  const schema = directive.transformer(
    makeExecutableSchema({ typeDefs: [directive.typeDefs, BUDGET_SDL], resolvers }),
  );
  const gate = { open };
  if (kind === 'apollo' && host.jit) throw new Error('Apollo Server has no jit');
  if (kind === 'yoga') {
    const yoga = createYoga<{ team?: string }>({
      schema,
      plugins: host.jit ? [useGraphQlJit(), directive.envelopPlugin] : [directive.envelopPlugin],
      logging: false,
      context: ({ request }) => ({ team: request.headers.get('x-team') ?? undefined }),
    });
    return {
      runs,
      peek: directive.peek,
      reset: directive.reset,
      gate,
      async run(query, team, variables, operationName) {
        const headers: Record<string, string> = { 'content-type': 'application/json' };
        if (team) headers['x-team'] = team;
        const response = await yoga.fetch('http://localhost/graphql', {
          method: 'POST',
          headers,
          body: JSON.stringify({ query, variables, operationName }),
        });
        const body = (await response.json()) as BudgetResponse['body'];
        return { status: response.status, header: (n) => response.headers.get(n), body };
      },
      stop: async () => undefined,
    };
  }
  if (kind === 'mercurius') {
    const app = Fastify();
    await app.register(mercurius, {
      schema,
      // Mercurius loads its default cache with import(), which jest's CommonJS cannot run
      cache: false,
      ...(host.jit && { jit: 1 }),
      context: (request) => ({ team: [request.headers['x-team']].flat()[0] }),
    });
    await app.register(mercuriusRateLimit, { directive });
    await app.ready();
    return {
      runs,
      peek: directive.peek,
      reset: directive.reset,
      gate,
      async run(query, team, variables, operationName) {
        const response = await app.inject({
          method: 'POST',
          url: '/graphql',
          headers: { 'content-type': 'application/json', ...(team && { 'x-team': team }) },
          payload: JSON.stringify({ query, variables, operationName }),
        });
        const body = response.json<BudgetResponse['body']>();
        const header = (n: string) => {
          const value = response.headers[n.toLowerCase()];
          return value === undefined ? null : [value].flat().join(', ');
        };
        return { status: response.statusCode, header, body };
      },
      stop: () => app.close(),
    };
  }
  const apollo = new ApolloServer<{ team?: string }>({ schema, plugins: [directive.plugin] });
  await apollo.start();
  return {
    runs,
    peek: directive.peek,
    reset: directive.reset,
    gate,
    async run(query, team, variables, operationName) {
      const response = await apollo.executeHTTPGraphQLRequest({
        httpGraphQLRequest: {
          method: 'POST',
          headers: new HeaderMap([['content-type', 'application/json']]),
          search: '',
          body: { query, ...(variables && { variables }), ...(operationName && { operationName }) },
        },
        context: async () => ({ team }),
      });
      if (response.body.kind !== 'complete') throw new Error('expected a complete body');
      const body = JSON.parse(response.body.string) as BudgetResponse['body'];
      return {
        status: response.status ?? 200,
        header: (n) => response.headers.get(n) ?? null,
        body,
      };
    },
    stop: () => apollo.stop(),
  };
}

/** What a budget suite opens with: {@link budgetPerTest}. */
export interface BudgetPerTest {
  /**
   * A server of `kind` with the suite's budget and `options` (which may replace the budget or
   * the store), on a store of a fresh Redis prefix; stopped after the test.
   */
  readonly serve: (options?: Partial<RateLimitDirectiveOptions>) => Promise<BudgetServer>;
  /** The Redis store of the last `serve`. */
  readonly store: () => RateLimitStore;
  /** A team no other test uses. */
  readonly team: () => string;
  /** What `identity` has left of the last server's `action` (default: the budget). */
  readonly left: (identity: string, action?: string) => Promise<number | undefined>;
}

/**
 * The opening every budget suite shares: one served budget per test, on a store of its own,
 * stopped after each test. Call it inside the suite's `describe`.
 */
export function budgetPerTest(kind: ServerKind, budget: BudgetOptions): BudgetPerTest {
  let server: BudgetServer | undefined;
  let store: RateLimitStore | undefined;
  afterEach(() => server?.stop());
  return {
    serve: async (options = {}) => {
      store = await openedRedisStore({ client: await connectRedis(), prefix: uniquePrefix() });
      return (server = await serveBudget(kind, { store, budget, ...options }));
    },
    store: () => {
      if (!store) throw new Error('serve() first');
      return store;
    },
    team: () => `team-${randomUUID()}`,
    left: async (identity, action = 'budget') =>
      (await server?.peek({ identity, action }))?.[0]?.remaining,
  };
}
