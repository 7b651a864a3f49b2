import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

import { ApolloServer } from '@apollo/server';
import { ApolloServerPluginDrainHttpServer } from '@apollo/server/plugin/drainHttpServer';
import { expressMiddleware } from '@as-integrations/express5';
import { makeExecutableSchema } from '@graphql-tools/schema';
import express from 'express';

import {
  rateLimitDirective,
  type DecisionEvent,
  type RateLimitStore,
  type StoreErrorPolicy,
} from '../index';
import { createContextFactory, type CtfContext } from './context';
import type { CtfData } from './data';
import { createResolvers } from './resolvers';

/** Options of {@link startCtfServer}. */
export interface CtfServerOptions {
  readonly data: CtfData;
  readonly store: RateLimitStore;
  /** @default 4000; 0 picks a free port */
  readonly port?: number | undefined;
  /** @default all interfaces */
  readonly host?: string | undefined;
  /** @default 'deny' */
  readonly onStoreError?: StoreErrorPolicy | undefined;
  /** Sees every decision, to log or meter. @default undefined */
  readonly onDecision?: ((event: DecisionEvent) => void) | undefined;
}

/** A running reference server. */
export interface CtfServer {
  readonly url: string;
  readonly port: number;
  /** Stops accepting requests, lets those in flight finish, and closes the HTTP server. */
  stop(): Promise<void>;
}

/** The reference server's SDL, read from `schema/` beside `src/` and `dist/`. */
export function ctfTypeDefs(): string {
  return readFileSync(join(__dirname, '..', '..', 'schema', 'ctf.graphql'), 'utf8');
}

/** Starts the CTF API (Apollo Server 5 on express) at `/graphql`. */
export async function startCtfServer(options: CtfServerOptions): Promise<CtfServer> {
  const { typeDefs, transformer } = rateLimitDirective<CtfContext>({
    store: options.store,
    onStoreError: options.onStoreError,
    onDecision: options.onDecision,
  });
  const schema = transformer(
    makeExecutableSchema({
      typeDefs: [typeDefs, ctfTypeDefs()],
      resolvers: createResolvers(options.data),
    }),
  );
  const app = express();
  const httpServer: Server = createServer(app);
  const apollo = new ApolloServer<CtfContext>({
    schema,
    plugins: [ApolloServerPluginDrainHttpServer({ httpServer })],
    includeStacktraceInErrorResponses: false,
  });
  await apollo.start();
  const contextOf = createContextFactory(options.data);
  app.use(
    '/graphql',
    express.json({ limit: '100kb' }),
    expressMiddleware(apollo, { context: async ({ req }) => contextOf(req.headers) }),
  );
  await new Promise<void>((resolve, reject) => {
    httpServer.once('error', reject);
    httpServer.listen(options.port ?? 4000, options.host, () => resolve());
  });
  const { port } = httpServer.address() as AddressInfo;
  return {
    url: `http://localhost:${port}/graphql`,
    port,
    stop: () => apollo.stop(),
  };
}
