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
import { sseStart, wsClient, type StartOutcome } from '../support/subscriptions';

/*
 * @rateLimit on a Subscription field counts starts per identity, exactly, where subscriptions
 * are served: graphql-ws beside Apollo Server, Yoga's own GraphQL over SSE, and Mercurius'
 * websocket; 12 simultaneous starts of one identity on a real Redis, limit 3.
 */

afterAll(closeClients);

const LIMIT = 3;
const STARTS = 12;
const SDL = `
  type Query { ok: Boolean }
  type Subscription { ticks: Int @rateLimit(action: "ticks", window: 60, limit: ${LIMIT}) }
`;
const TICKS = 'subscription { ticks }';

type Context = { identity?: string };

interface Served {
  /** How many source streams the field's own subscribe made. */
  readonly subscribed: () => number;
  /** Starts `TICKS` as `identity`, on a connection of its own; fire() says what came of it. */
  prepare(identity: string): Promise<() => Promise<StartOutcome>>;
  stop(): Promise<void>;
}

async function parts(): Promise<{
  directive: RateLimitDirective;
  resolvers: Record<string, unknown>;
  subscribed: () => number;
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
  return { directive, resolvers, subscribed: () => subscribed };
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

/** graphql-ws over `ws` on the HTTP server of an Apollo Server (the Apollo docs' set-up). */
async function apollo(): Promise<Served> {
  const { directive, resolvers, subscribed } = await parts();
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
  const url = `ws://127.0.0.1:${await listening(server)}/graphql`;
  const clients: { close(): Promise<void> }[] = [];
  return {
    subscribed,
    async prepare(identity) {
      const client = await wsClient(url, { identity });
      clients.push(client);
      return () => client.start(TICKS);
    },
    async stop() {
      await Promise.all(clients.map((c) => c.close()));
      await cleanup.dispose();
      await apolloServer.stop();
      await closing(server);
    },
  };
}

/** Yoga's built-in GraphQL over SSE, with its envelop plugin. */
async function yoga(): Promise<Served> {
  const { directive, resolvers, subscribed } = await parts();
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
  return {
    subscribed,
    prepare: async (identity) => () => sseStart(url, TICKS, identity),
    stop: () => closing(server),
  };
}

/** Mercurius' websocket (`subscription: true`), the identity from `connection_init`. */
async function mercuriusWs(): Promise<Served> {
  const { directive, resolvers, subscribed } = await parts();
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
  const url = `${address.replace(/^http/, 'ws')}/graphql`;
  const clients: { close(): Promise<void> }[] = [];
  return {
    subscribed,
    async prepare(identity) {
      const client = await wsClient(url, { identity });
      clients.push(client);
      return () => client.start(TICKS);
    },
    async stop() {
      await Promise.all(clients.map((c) => c.close()));
      await app.close();
    },
  };
}

describe.each([
  ['Apollo Server, graphql-ws', apollo],
  ['Yoga, GraphQL over SSE', yoga],
  ['Mercurius, its websocket', mercuriusWs],
])('%s', (_host, serve) => {
  test(`${STARTS} simultaneous starts of one identity: exactly ${LIMIT} start`, async () => {
    const served = await serve();
    try {
      const identity = `team-${randomUUID()}`;
      const outcomes = await releaseTogether(STARTS, () => served.prepare(identity));
      expect(outcomes.filter((o) => o === 'started')).toHaveLength(LIMIT);
      expect(outcomes.filter((o) => o !== 'started')).toEqual(
        Array<string>(STARTS - LIMIT).fill('RATE_LIMITED'),
      );
      // a refused start made no source stream
      expect(served.subscribed()).toBe(LIMIT);
      // another identity starts as before
      const other = await served.prepare(`team-${randomUUID()}`);
      expect(await other()).toBe('started');
    } finally {
      await served.stop();
    }
  });
});
