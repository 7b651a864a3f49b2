import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import { ApolloServer } from '@apollo/server';
import { expressMiddleware } from '@as-integrations/express5';
import { useGraphQlJit } from '@envelop/graphql-jit';
import { addResolversToSchema, makeExecutableSchema } from '@graphql-tools/schema';
import express from 'express';
import type { GraphQLSchema } from 'graphql';
import { useServer } from 'graphql-ws/use/ws';
import { createYoga } from 'graphql-yoga';
import { fetch } from 'undici';
import { WebSocketServer } from 'ws';

import { createRedisStore, rateLimitDirective, type RateLimitDirective } from '../../src';
import { startProcess, waitFor } from '../support/processes';
import { connectRedis, redisUrl, uniquePrefix } from '../support/redis';
import { opened } from '../support/stores';
import {
  sseHold,
  wsClient,
  wsHolder,
  type Held,
  type StartOutcome,
} from '../support/subscriptions';
import { BUDGET, SDL, replacementFor, resolversFor } from '../../kit/conformance-app';

/*
 * One adapter per host of the conformance suite: each serves kit/conformance-app.js with the
 * library as a user wires it into that host, on the run's Redis under a prefix of its own, and
 * takes operations over HTTP as an identity (the `x-identity` header).
 */

/** A GraphQL response body: one operation's, or a batch's array of them. */
export type Body = {
  data?: Record<string, unknown> | null;
  errors?: { message: string; extensions?: Record<string, unknown> }[];
  extensions?: Record<string, unknown>;
};

/** One app served by a host. */
export interface Served {
  /**
   * POSTs `body` (one `{ query, variables }`, or a batch: an array of them) as `identity`; the
   * client leaves (its request aborted) when `signal` aborts.
   */
  post(
    body: unknown,
    identity: string,
    signal?: AbortSignal,
  ): Promise<{ status: number; body: Body | Body[] }>;
  /** How many times each resolver ran (`Type.field`). */
  runs(): Promise<Record<string, number>>;
  /**
   * Opens a connection as `identity` and returns what starts `subscription` (`subscription {
   * ticks }` unless told) on it, left open until `stop`; undefined when the host serves no
   * subscriptions.
   */
  readonly subscribe:
    ((identity: string, subscription?: string) => Promise<() => Promise<StartOutcome>>) | undefined;
  /**
   * Starts `subscription { live }` as `identity` the way the host drops a start: Yoga answers 406
   * to one asked for as JSON (its stream made, never iterated); over graphql-ws the client's
   * socket closes once the start ran. Resolves once the field's `subscribe` ran; undefined when
   * the host serves no subscriptions.
   */
  readonly dropStart: ((identity: string) => Promise<void>) | undefined;
  stop(): Promise<void>;
}

/** How `Served` is started. */
export interface HostOptions {
  /** After the library wrapped the schema, put another resolver in `Query.replaced`'s place. */
  readonly replace: boolean;
}

export interface Host {
  readonly name: string;
  /** Whether the host takes an array of operations in one request. */
  readonly batching: boolean;
  /** Whether the host serves subscriptions (then `Served.subscribe` starts one). */
  readonly subscriptions: boolean;
  start(options: HostOptions): Promise<Served>;
}

type Context = { identity?: string };

async function directiveFor(): Promise<RateLimitDirective> {
  const store = await opened(
    createRedisStore({ client: await connectRedis(), prefix: uniquePrefix() }),
  );
  return rateLimitDirective<Context>({
    store,
    identify: (context) => context.identity,
    budget: BUDGET,
    timeoutMs: 2_000,
  });
}

/** The app's schema, through the directive's transformer; then, with `replace`, replaced. */
function servedSchema(
  directive: RateLimitDirective,
  runs: Record<string, number>,
  { replace }: HostOptions,
): GraphQLSchema {
  const schema = directive.transformer(
    makeExecutableSchema({
      typeDefs: [directive.typeDefs, SDL],
      resolvers: resolversFor(runs) as never,
    }),
  );
  return replace
    ? addResolversToSchema({ schema, resolvers: replacementFor(runs) as never })
    : schema;
}

const listening = (server: Server): Promise<string> =>
  new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve(`127.0.0.1:${(server.address() as AddressInfo).port}`),
    ),
  );

const closing = (server: Server): Promise<void> =>
  new Promise((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });

export async function postJson(
  url: string,
  body: unknown,
  identity: string,
  signal?: AbortSignal,
): Promise<{ status: number; body: Body | Body[] }> {
  const timeout = AbortSignal.timeout(20_000);
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-identity': identity },
    body: JSON.stringify(body),
    signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
  });
  return { status: response.status, body: (await response.json()) as Body | Body[] };
}

/**
 * graphql-ws subscriptions at `url`, the identity in `connection_init`; `runs` tells when a
 * start dropped by its client ran.
 */
export function wsSubscriptions(
  url: string,
  runs: Served['runs'],
): {
  subscribe: NonNullable<Served['subscribe']>;
  dropStart: NonNullable<Served['dropStart']>;
  close(): Promise<void>;
} {
  const clients: { close(): Promise<void> }[] = [];
  return {
    async subscribe(identity, subscription = 'subscription { ticks }') {
      const client = await wsHolder(url, { identity });
      clients.push(client);
      return async () => (await client.hold(subscription)).outcome;
    },
    async dropStart(identity) {
      const before = (await runs())['Subscription.live'] ?? 0;
      const client = await wsClient(url, { identity });
      try {
        void client.start('subscription { live }');
        await waitFor(
          'the start to run',
          async () => ((await runs())['Subscription.live'] ?? 0) > before,
          10_000,
          20,
        );
      } finally {
        await client.close();
      }
    },
    close: async () => void (await Promise.all(clients.map((c) => c.close()))),
  };
}

/** A start of `subscription { live }` POSTed as JSON to Yoga at `url`: its answer is 406. */
async function yogaDropStart(url: string, identity: string): Promise<void> {
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json',
      'x-identity': identity,
    },
    body: JSON.stringify({ query: 'subscription { live }' }),
    signal: AbortSignal.timeout(20_000),
  });
  await response.text();
  if (response.status !== 406) throw new Error(`expected Yoga's 406, got ${response.status}`);
}

/** Apollo Server 5 (`plugin`) on Express, batching on, graphql-ws beside it. */
const apollo: Host = {
  name: 'Apollo Server',
  batching: true,
  subscriptions: true,
  async start(options) {
    const directive = await directiveFor();
    const runs: Record<string, number> = {};
    const schema = servedSchema(directive, runs, options);
    const app = express();
    const server = createServer(app);
    const sockets = new WebSocketServer({ server, path: '/graphql' });
    const cleanup = useServer<{ identity?: string }>(
      { schema, context: (ctx) => ({ identity: ctx.connectionParams?.identity as string }) },
      sockets,
    );
    const apolloServer = new ApolloServer<Context>({
      schema,
      plugins: [directive.plugin],
      allowBatchedHttpRequests: true,
    });
    await apolloServer.start();
    app.use(
      '/graphql',
      express.json(),
      expressMiddleware(apolloServer, {
        context: async ({ req }) => ({ identity: req.header('x-identity') }),
      }),
    );
    const address = await listening(server);
    const ws = wsSubscriptions(`ws://${address}/graphql`, async () => ({ ...runs }));
    return {
      post: (body, identity, signal) =>
        postJson(`http://${address}/graphql`, body, identity, signal),
      runs: async () => ({ ...runs }),
      subscribe: ws.subscribe,
      dropStart: ws.dropStart,
      async stop() {
        await ws.close();
        await cleanup.dispose();
        await apolloServer.stop();
        await closing(server);
      },
    };
  },
};

/** GraphQL Yoga 5 (`envelopPlugin`), batching on, its own SSE; with envelop's graphql-jit. */
function yoga(jit: boolean): Host {
  return {
    name: jit ? 'Yoga with @envelop/graphql-jit' : 'Yoga',
    batching: true,
    subscriptions: true,
    async start(options) {
      const directive = await directiveFor();
      const runs: Record<string, number> = {};
      const served = createYoga<Context>({
        schema: servedSchema(directive, runs, options),
        plugins: jit ? [useGraphQlJit(), directive.envelopPlugin] : [directive.envelopPlugin],
        batching: true,
        logging: false,
        context: ({ request }) => ({ identity: request.headers.get('x-identity') ?? undefined }),
      });
      const server = createServer(served.requestListener);
      const url = `http://${await listening(server)}/graphql`;
      const holding: Held[] = [];
      return {
        post: (body, identity, signal) => postJson(url, body, identity, signal),
        runs: async () => ({ ...runs }),
        subscribe:
          async (identity, subscription = 'subscription { ticks }') =>
          async () => {
            const held = await sseHold(url, subscription, identity);
            holding.push(held);
            return held.outcome;
          },
        dropStart: (identity) => yogaDropStart(url, identity),
        async stop() {
          for (const held of holding) held.close();
          await closing(server);
        },
      };
    },
  };
}

/**
 * A host run as its own process from `script` (kit/), told `CONFORMANCE` (JSON): it prints
 * `listening <url>` and serves `GET /runs`; graphql-ws at the same address when `ws`.
 */
async function processHost(
  script: string,
  config: Record<string, unknown>,
  ws: boolean,
): Promise<Served> {
  const child = startProcess(process.execPath, [require.resolve(`../../kit/${script}`)], {
    env: {
      ...process.env,
      REDIS_URL: redisUrl(),
      CONFORMANCE: JSON.stringify({ ...config, prefix: uniquePrefix() }),
    },
  });
  const [, url = ''] = await child.waitForOutput(/listening (\S+)/, 60_000);
  const runs = async () =>
    (await (await fetch(url.replace(/graphql$/, 'runs'))).json()) as Record<string, number>;
  const sockets = ws ? wsSubscriptions(url.replace(/^http/, 'ws'), runs) : undefined;
  return {
    post: (body, identity, signal) => postJson(url, body, identity, signal),
    runs,
    subscribe: sockets?.subscribe,
    dropStart: sockets?.dropStart,
    async stop() {
      await sockets?.close();
      await child.stop();
    },
  };
}

/** Mercurius 16 (`mercuriusRateLimit`) as its own process (kit/conformance-mercurius.js). */
function mercurius(jit: 0 | 1): Host {
  return {
    name: `Mercurius, jit ${jit}`,
    batching: true,
    subscriptions: true,
    start: ({ replace }) => processHost('conformance-mercurius.js', { jit, replace }, true),
  };
}

/**
 * Hive Gateway (`envelopPlugin`, the budget) before the app as an Apollo subgraph (`plugin`, the
 * fields), as its own process (kit/conformance-gateway.js). No subscriptions: serving them
 * through a gateway takes a subscription transport to the subgraph, which this set-up has not.
 */
const gateway: Host = {
  name: 'Hive Gateway',
  batching: true,
  subscriptions: false,
  start: ({ replace }) => processHost('conformance-gateway.js', { replace }, false),
};

/** Every host the suite runs on. */
export const HOSTS: readonly Host[] = [
  apollo,
  yoga(false),
  yoga(true),
  mercurius(0),
  mercurius(1),
  gateway,
];
