import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

import { ApolloServer } from '@apollo/server';
import { ApolloServerPluginDrainHttpServer } from '@apollo/server/plugin/drainHttpServer';
import { expressMiddleware } from '@as-integrations/express5';
import { addResolversToSchema, makeExecutableSchema } from '@graphql-tools/schema';
import express from 'express';

import { rateLimitDirective, type RateLimitDirectiveOptions } from 'graphql-atomic-rate-limit';
import { caller, CTF_BUDGET } from './budget';
import { SERVER_DEFAULTS } from './config';
import { createContextFactory, type CtfContext } from './context';
import type { CtfData } from './data';
import { jsonErrorHandler } from './http-errors';
import { jsonClientStatus } from './json-status';
import { createLimitResolvers } from './limit-resolvers';
import { createRateLimitMetrics } from './metrics';
import { queryLimits } from './query-limits';
import { createResolvers } from './resolvers';
import { securityHeaders } from './security-headers';
import { expressTrustProxy, type TrustProxy } from './trust-proxy';

/**
 * Options of {@link startCtfServer}: the directive's own (`store`, `fallbackStore`,
 * `onStoreError`, `onDecision` besides the server's metrics, `dryRun`, `timeoutMs`, with the
 * directive's defaults), and the server's.
 */
export interface CtfServerOptions extends Pick<
  RateLimitDirectiveOptions<CtfContext>,
  'store' | 'fallbackStore' | 'onStoreError' | 'onDecision' | 'dryRun' | 'timeoutMs'
> {
  readonly data: CtfData;
  /** @default 4000; 0 picks a free port */
  readonly port?: number | undefined;
  /** The address to listen on. @default '127.0.0.1' */
  readonly host?: string | undefined;
  /** Time a client has to send its request headers. @default 10000 */
  readonly headersTimeoutMs?: number | undefined;
  /** Time a client has to send its whole request, body included; at least `headersTimeoutMs`. @default 30000 */
  readonly requestTimeoutMs?: number | undefined;
  /**
   * Whether the store's backend answers, for `GET /health`, which reports ready only once
   * `store.ready()` resolved. @default always true
   */
  readonly storeReachable?: (() => Promise<boolean>) | undefined;
  /**
   * Whose `X-Forwarded-For` names the client (express's `trust proxy`), for `by: "ip"`.
   * @default false: the socket's peer, whatever the header says
   */
  readonly trustProxy?: TrustProxy | undefined;
  /** Whether `__schema` and `__type` answer (one of them per operation). @default true */
  readonly introspection?: boolean | undefined;
}

/** A running reference server. */
export interface CtfServer {
  /** The GraphQL endpoint, on the bound address (`localhost` when bound to every interface). */
  readonly url: string;
  /** The address and port the server is bound to, as the OS reports them. */
  readonly address: AddressInfo;
  readonly port: number;
  /** Stops accepting requests, lets those in flight finish, and closes the HTTP server. */
  stop(): Promise<void>;
}

const root = join(__dirname, '..');

/** The reference server's SDL, read from `server/schema/`, beside `server/src/` and `server/dist/`. */
export function ctfTypeDefs(): string {
  return readFileSync(join(root, 'schema', 'ctf.graphql'), 'utf8');
}

/**
 * Starts the CTF API (Apollo Server 5 on express): `POST /graphql`, `GET /metrics`
 * (Prometheus), `GET /health`, and the team page at `/`.
 */
export async function startCtfServer(options: CtfServerOptions): Promise<CtfServer> {
  const metrics = createRateLimitMetrics();
  const { typeDefs, transformer, plugin, peek, reset, rules } = rateLimitDirective<CtfContext>({
    store: options.store,
    fallbackStore: options.fallbackStore,
    // `@rateLimit(by: "global")`: one counter for the whole site, whoever asks; `by: "ip"`:
    // the client's address as `trustProxy` reads it.
    identities: { global: () => 'all', caller, ip: (context) => context.ip },
    timeoutMs: options.timeoutMs ?? SERVER_DEFAULTS.rateLimitTimeoutMs,
    budget: CTF_BUDGET,
    onStoreError: options.onStoreError,
    dryRun: options.dryRun,
    exposeLimits: true,
    onDecision: (event) => {
      metrics.observe(event);
      options.onDecision?.(event);
    },
  });
  const plain = makeExecutableSchema({ typeDefs: [typeDefs, ctfTypeDefs()] });
  const game = createResolvers(options.data);
  const controls = createLimitResolvers(options.data, { peek, reset, rules });
  const schema = transformer(
    addResolversToSchema({
      schema: plain,
      resolvers: {
        ...game,
        Query: { ...game.Query, ...controls.Query },
        Mutation: { ...game.Mutation, ...controls.Mutation },
      },
    }),
  );
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', expressTrustProxy(options.trustProxy ?? SERVER_DEFAULTS.trustProxy));
  app.use(securityHeaders());
  const headersTimeout = options.headersTimeoutMs ?? SERVER_DEFAULTS.headersTimeoutMs;
  const httpServer: Server = createServer(
    {
      headersTimeout,
      requestTimeout: Math.max(
        options.requestTimeoutMs ?? SERVER_DEFAULTS.requestTimeoutMs,
        headersTimeout,
      ),
      // Node enforces both timeouts on this tick (default 30 s): a slow client could otherwise
      // hold its connection for up to that long past them.
      connectionsCheckingInterval: Math.min(1_000, headersTimeout),
    },
    app,
  );
  const introspection = options.introspection ?? SERVER_DEFAULTS.introspection;
  const limits = queryLimits();
  const apollo = new ApolloServer<CtfContext>({
    schema,
    plugins: [
      ApolloServerPluginDrainHttpServer({ httpServer }),
      plugin,
      ...limits.plugins,
      jsonClientStatus(),
    ],
    introspection,
    validationRules: limits.validationRules,
    parseOptions: limits.parseOptions,
    includeStacktraceInErrorResponses: false,
  });
  await apollo.start();
  const contextOf = createContextFactory(options.data);
  app.use(
    '/graphql',
    express.json({ limit: BODY_LIMIT }),
    expressMiddleware(apollo, { context: async ({ req }) => contextOf(req.headers, req.ip) }),
  );
  app.get('/metrics', async (_req, res) => {
    res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });
  // ready once the store can decide (connected, its Lua loaded): until then /health says so
  let storeReady = false;
  (options.store.ready?.() ?? Promise.resolve()).then(
    () => (storeReady = true),
    () => undefined,
  );
  app.get('/health', async (_req, res) => {
    const up = await (options.storeReachable?.() ?? Promise.resolve(true)).catch(() => false);
    // a store that cannot be reached is down, set up or not; one that answers is ready once set up
    if (!up) res.status(503).json({ status: 'degraded', store: 'down' });
    else if (!storeReady) res.status(503).json({ status: 'starting', store: 'setting up' });
    else res.status(200).json({ status: 'ok', store: 'up' });
  });
  app.use(express.static(join(root, 'public'), { index: 'index.html' }));
  app.use(jsonErrorHandler());

  await new Promise<void>((resolve, reject) => {
    httpServer.once('error', reject);
    httpServer.listen(
      options.port ?? SERVER_DEFAULTS.port,
      options.host ?? SERVER_DEFAULTS.host,
      () => resolve(),
    );
  });
  const address = httpServer.address() as AddressInfo;
  return {
    url: `http://${urlHost(address)}:${address.port}/graphql`,
    address,
    port: address.port,
    stop: () => apollo.stop(),
  };
}

/** A request body larger than this is refused with 413 before it is parsed. */
const BODY_LIMIT = '100kb';

/** The host part of a URL that reaches `address`; an unspecified address is reached locally. */
function urlHost({ address, family }: AddressInfo): string {
  if (address === '0.0.0.0' || address === '::') return 'localhost';
  return family === 'IPv6' ? `[${address}]` : address;
}
