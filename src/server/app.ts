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
import { jsonErrorHandler } from './http-errors';
import { createRateLimitMetrics } from './metrics';
import { queryLimits } from './query-limits';
import { createResolvers } from './resolvers';
import { securityHeaders } from './security-headers';

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
  /** Sees every decision, besides the server's own metrics. @default undefined */
  readonly onDecision?: ((event: DecisionEvent) => void) | undefined;
  /** Report but never block. @default false */
  readonly dryRun?: boolean | undefined;
  /** Whether the store's backend answers, for `GET /health`. @default always true */
  readonly storeReachable?: (() => Promise<boolean>) | undefined;
}

/** A running reference server. */
export interface CtfServer {
  readonly url: string;
  readonly port: number;
  /** Stops accepting requests, lets those in flight finish, and closes the HTTP server. */
  stop(): Promise<void>;
}

const root = join(__dirname, '..', '..');

/** The reference server's SDL, read from `schema/` beside `src/` and `dist/`. */
export function ctfTypeDefs(): string {
  return readFileSync(join(root, 'schema', 'ctf.graphql'), 'utf8');
}

/**
 * Starts the CTF API (Apollo Server 5 on express): `POST /graphql`, `GET /metrics`
 * (Prometheus), `GET /health`, and the team page at `/`.
 */
export async function startCtfServer(options: CtfServerOptions): Promise<CtfServer> {
  const metrics = createRateLimitMetrics();
  const { typeDefs, transformer, plugin } = rateLimitDirective<CtfContext>({
    store: options.store,
    onStoreError: options.onStoreError,
    dryRun: options.dryRun,
    exposeLimits: true,
    onDecision: (event) => {
      metrics.observe(event);
      options.onDecision?.(event);
    },
  });
  const schema = transformer(
    makeExecutableSchema({
      typeDefs: [typeDefs, ctfTypeDefs()],
      resolvers: createResolvers(options.data),
    }),
  );
  const app = express();
  app.disable('x-powered-by');
  app.use(securityHeaders());
  const httpServer: Server = createServer(app);
  const limits = queryLimits();
  const apollo = new ApolloServer<CtfContext>({
    schema,
    plugins: [ApolloServerPluginDrainHttpServer({ httpServer }), plugin, ...limits.plugins],
    validationRules: limits.validationRules,
    parseOptions: limits.parseOptions,
    includeStacktraceInErrorResponses: false,
  });
  await apollo.start();
  const contextOf = createContextFactory(options.data);
  app.use(
    '/graphql',
    express.json({ limit: BODY_LIMIT }),
    expressMiddleware(apollo, { context: async ({ req }) => contextOf(req.headers) }),
  );
  app.get('/metrics', async (_req, res) => {
    res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });
  app.get('/health', async (_req, res) => {
    const up = await (options.storeReachable?.() ?? Promise.resolve(true)).catch(() => false);
    res.status(up ? 200 : 503).json({ status: up ? 'ok' : 'degraded', store: up ? 'up' : 'down' });
  });
  app.use(express.static(join(root, 'public'), { index: 'index.html' }));
  app.use(jsonErrorHandler());

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

/** A request body larger than this is refused with 413 before it is parsed. */
const BODY_LIMIT = '100kb';
