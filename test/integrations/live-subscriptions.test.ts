import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import { ApolloServer } from '@apollo/server';
import { expressMiddleware } from '@as-integrations/express5';
import { makeExecutableSchema } from '@graphql-tools/schema';
import express from 'express';
import Fastify from 'fastify';
import { useServer } from 'graphql-ws/use/ws';
import { createYoga } from 'graphql-yoga';
import mercurius from 'mercurius';
import { WebSocketServer } from 'ws';

import { rateLimitDirective, type RateLimitDirective } from '../../src';
import { mercuriusRateLimit } from '../../src/mercurius';
import { releaseTogether } from '../support/barrier';
import { closeClients } from '../support/redis';
import { freshStore } from '../support/stores';
import { sseHold, wsHolder, type StartOutcome } from '../support/subscriptions';

/*
 * CONCURRENCY on a Subscription field counts live subscriptions per identity where they are
 * served: graphql-ws beside Apollo Server, Yoga's GraphQL over SSE, and Mercurius' websocket.
 * The slot frees when the client completes its subscription, when its socket closes, and when
 * the server shuts down.
 */

afterAll(closeClients);

const LIMIT = 3;
const SDL = `
  type Query { ok: Boolean }
  type Subscription {
    ticks: Int @rateLimit(action: "ticks", window: 30, limit: ${LIMIT}, algorithm: CONCURRENCY)
  }
`;
const TICKS = 'subscription { ticks }';

type Context = { identity?: string };

/** A subscription a client holds open. */
interface Live {
  readonly outcome: StartOutcome;
  /** The client ends its subscription (graphql-ws `complete`; over SSE, the request aborted). */
  complete(): void;
  /** The client's socket closes, with nothing said. */
  drop(): Promise<void>;
}

interface Served {
  /** How many source streams the field's own subscribe made. */
  readonly subscribed: () => number;
  /** The slots `identity` has free, as `peek` reports them. */
  readonly free: (identity: string) => Promise<number>;
  /** Holds `TICKS` open as `identity`, on a connection of its own. */
  prepare(identity: string): Promise<() => Promise<Live>>;
  stop(): Promise<void>;
}

async function parts(): Promise<{
  directive: RateLimitDirective;
  resolvers: Record<string, unknown>;
  subscribed: () => number;
  free: (identity: string) => Promise<number>;
}> {
  const { store } = await freshStore('redis');
  const directive = rateLimitDirective<Context>({ store, identify: (c) => c.identity });
  let subscribed = 0;
  async function* ticks() {
    yield { ticks: 1 };
    await new Promise(() => undefined); // open until the client leaves
  }
  const resolvers = {
    Subscription: { ticks: { subscribe: () => (subscribed++, ticks()) } },
  };
  const free = async (identity: string) =>
    (await directive.peek({ identity, action: 'ticks' }))[0]!.remaining;
  return { directive, resolvers, subscribed: () => subscribed, free };
}

const listening = (server: Server): Promise<number> =>
  new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)),
  );

const closing = (server: Server): Promise<void> =>
  new Promise((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });

/** graphql-ws clients, one socket each, to `url`; `closeAll` disposes those still open. */
function wsClients(url: string) {
  const clients: { close(): Promise<void> }[] = [];
  return {
    async prepare(identity: string): Promise<() => Promise<Live>> {
      const client = await wsHolder(url, { identity });
      clients.push(client);
      return async () => {
        const held = await client.hold(TICKS);
        return { outcome: held.outcome, complete: () => held.close(), drop: () => client.close() };
      };
    },
    closeAll: () => Promise.all(clients.map((c) => c.close())),
  };
}

/** graphql-ws over `ws` on the HTTP server of an Apollo Server (the Apollo docs' set-up). */
async function apollo(): Promise<Served> {
  const { directive, resolvers, subscribed, free } = await parts();
  const schema = directive.transformer(
    makeExecutableSchema({ typeDefs: [directive.typeDefs, SDL], resolvers: resolvers as never }),
  );
  const app = express();
  const server = createServer(app);
  const sockets = new WebSocketServer({ server, path: '/graphql' });
  const cleanup = useServer<{ identity?: string }>(
    { schema, context: (ctx) => ({ identity: ctx.connectionParams?.identity as string }) },
    sockets,
  );
  const apolloServer = new ApolloServer<Context>({ schema, plugins: [directive.plugin] });
  await apolloServer.start();
  app.use('/graphql', express.json(), expressMiddleware(apolloServer));
  const clients = wsClients(`ws://127.0.0.1:${await listening(server)}/graphql`);
  return {
    subscribed,
    free,
    prepare: (identity) => clients.prepare(identity),
    async stop() {
      await clients.closeAll();
      await cleanup.dispose();
      await apolloServer.stop();
      await closing(server);
    },
  };
}

/** Yoga's built-in GraphQL over SSE, with its envelop plugin. */
async function yoga(): Promise<Served> {
  const { directive, resolvers, subscribed, free } = await parts();
  const schema = directive.transformer(
    makeExecutableSchema({ typeDefs: [directive.typeDefs, SDL], resolvers: resolvers as never }),
  );
  const served = createYoga<Context>({
    schema,
    plugins: [directive.envelopPlugin],
    logging: false,
    context: ({ request }) => ({ identity: request.headers.get('x-identity') ?? undefined }),
  });
  const server = createServer(served.requestListener);
  const url = `http://127.0.0.1:${await listening(server)}/graphql`;
  const open: Live[] = [];
  return {
    subscribed,
    free,
    prepare: async (identity) => async () => {
      const held = await sseHold(url, TICKS, identity);
      const live = {
        outcome: held.outcome,
        complete: () => held.close(),
        drop: async () => held.close(),
      };
      open.push(live);
      return live;
    },
    async stop() {
      // the server closes its connections first: the clients have not left
      await closing(server);
      for (const live of open) live.complete();
    },
  };
}

/** Mercurius' websocket (`subscription: true`), the identity from `connection_init`. */
async function mercuriusWs(): Promise<Served> {
  const { directive, resolvers, subscribed, free } = await parts();
  const app = Fastify();
  await app.register(mercurius, {
    schema: [directive.typeDefs, SDL],
    resolvers: resolvers as never,
    cache: false,
    subscription: {
      onConnect: ({ payload }) => ({ identity: (payload as Context | undefined)?.identity }),
    },
  });
  await app.register(mercuriusRateLimit, { directive });
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  const clients = wsClients(`${address.replace(/^http/, 'ws')}/graphql`);
  return {
    subscribed,
    free,
    prepare: (identity) => clients.prepare(identity),
    async stop() {
      await clients.closeAll();
      await app.close();
    },
  };
}

/**
 * Starts subscriptions as `identity` until one is live: the server frees a slot after the client
 * has left, and the client is told nothing of it. Gives up after 10 s.
 */
async function admitted(served: Served, identity: string): Promise<Live> {
  const until = Date.now() + 10_000;
  for (;;) {
    const live = await (await served.prepare(identity))();
    if (live.outcome === 'started' || Date.now() > until) return live;
    expect(live.outcome).toBe('RATE_LIMITED');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe.each([
  ['Apollo Server, graphql-ws', apollo],
  ['Yoga, GraphQL over SSE', yoga],
  ['Mercurius, its websocket', mercuriusWs],
])('%s', (_host, serve) => {
  test(`5 live subscriptions for ${LIMIT} slots: ${LIMIT} start; a client that completes or drops frees its slot`, async () => {
    const served = await serve();
    try {
      const identity = `team-${randomUUID()}`;
      const lives = await releaseTogether(5, () => served.prepare(identity));
      expect(lives.filter((l) => l.outcome === 'started')).toHaveLength(LIMIT);
      expect(lives.filter((l) => l.outcome !== 'started').map((l) => l.outcome)).toEqual([
        'RATE_LIMITED',
        'RATE_LIMITED',
      ]);
      // a refused start made no source stream
      expect(served.subscribed()).toBe(LIMIT);
      const started = lives.filter((l) => l.outcome === 'started');
      // the client completes one: another is admitted in its place, and only one
      started[0]!.complete();
      const next = await admitted(served, identity);
      expect(next.outcome).toBe('started');
      expect((await (await served.prepare(identity))()).outcome).toBe('RATE_LIMITED');
      // a socket closes under another: its slot frees too
      await started[1]!.drop();
      expect((await admitted(served, identity)).outcome).toBe('started');
      expect((await (await served.prepare(identity))()).outcome).toBe('RATE_LIMITED');
      expect(served.subscribed()).toBe(LIMIT + 2);
    } finally {
      await served.stop();
    }
  });

  test('the server shuts down: every live subscription frees its slot', async () => {
    const served = await serve();
    const identity = `team-${randomUUID()}`;
    try {
      const lives = await Promise.all(
        Array.from({ length: LIMIT }, async () => (await served.prepare(identity))()),
      );
      expect(lives.map((l) => l.outcome)).toEqual(Array(LIMIT).fill('started'));
      expect(await served.free(identity)).toBe(0);
    } finally {
      await served.stop();
    }
    // the releases follow the server's closing of its streams; the lease time (30 s) is far off
    const until = Date.now() + 10_000;
    while ((await served.free(identity)) < LIMIT && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(await served.free(identity)).toBe(LIMIT);
  });
});
