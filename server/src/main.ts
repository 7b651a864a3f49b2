import { Cluster, Redis } from 'ioredis';

import {
  createMemoryStore,
  createRedisStore,
  type RateLimitDirectiveOptions,
  type RateLimitStore,
} from 'graphql-atomic-rate-limit';
import { startCtfServer } from './app';
import { readServerConfig, type ServerConfig, type ServerStoreErrorPolicy } from './config';
import { loadCtfData } from './data';
import { within } from './deadline';
import { localFallback } from './local-fallback';
import { log, throttled } from './log';
import { CLIENT_OPTIONS, CLUSTER_OPTIONS } from './redis-client';
import { redact, tlsHint } from './redis-url';

/*
 * `npm start`: the reference CTF server, configured by the environment (see config.ts). A value
 * it does not understand stops it at once with one line and exit code 1.
 */

interface Backend {
  readonly store: RateLimitStore;
  readonly describe: string;
  close(): Promise<void>;
  reachable(): Promise<boolean>;
}

/** PING within a second: what `GET /health` reports. */
const pings = (client: Redis | Cluster) => async (): Promise<boolean> =>
  client.status === 'ready' &&
  within(client.ping(), 1_000).then(
    (reply) => reply === 'PONG',
    () => false,
  );

async function connect(config: ServerConfig): Promise<Backend> {
  const { prefix, redisClusterNodes: nodes, redisUrl: url } = config;
  if (nodes) {
    const cluster = new Cluster(
      nodes.map((node) => ({ ...node })),
      CLUSTER_OPTIONS,
    );
    watch(cluster, 'Redis Cluster');
    await connectWithin(cluster);
    return {
      store: createRedisStore({ client: cluster, prefix }),
      describe: `Redis Cluster ${nodes.map((n) => `${n.host}:${n.port}`).join(',')}`,
      close: quit(cluster),
      reachable: pings(cluster),
    };
  }
  if (url) {
    const redis = new Redis(url, CLIENT_OPTIONS);
    watch(redis, 'Redis');
    await connectWithin(redis, url);
    return {
      store: createRedisStore({ client: redis, prefix }),
      describe: `Redis ${redact(url)}`,
      close: quit(redis),
      reachable: pings(redis),
    };
  }
  log(
    'warn',
    'No REDIS_URL or REDIS_CLUSTER_NODES: using the in-process memory store (limits are not shared between processes)',
  );
  return {
    store: createMemoryStore(),
    describe: 'memory',
    close: async () => undefined,
    reachable: async () => true,
  };
}

/**
 * Connection trouble is logged (throttled); ioredis keeps reconnecting on its own. A database
 * index that Redis refuses stops the server: ioredis would log it and carry on in database 0,
 * another database than the one asked for, shared with whatever else lives there. So do
 * credentials Redis refuses (WRONGPASS, NOAUTH): reconnecting never fixes them, and the server
 * would answer RATE_LIMIT_UNAVAILABLE forever. Redis' reply names no password, nor does the line.
 */
function watch(client: Redis | Cluster, name: string): void {
  const lost = throttled('warn', `${name} connection error`);
  client.on('error', (error: Error & { command?: { name?: string; args?: unknown[] } }) => {
    if (error.command?.name === 'select') {
      const index = String(error.command.args?.[0]);
      fail(`REDIS_URL names database ${index}, which this Redis refuses: ${error.message}`);
    }
    const refused = /\b(WRONGPASS|NOAUTH)\b/.exec(error.message)?.[1];
    if (refused) {
      const setting = name === 'Redis' ? 'REDIS_URL' : 'REDIS_CLUSTER_NODES';
      fail(
        refused === 'NOAUTH'
          ? `${name} requires a password (NOAUTH) that ${setting} does not give`
          : `${name} refuses the user or password that ${setting} gives (WRONGPASS)`,
      );
    }
    lost({ error: error.message });
  });
  client.on('ready', () => log('info', `${name} ready`));
}

const CONNECT_WAIT_MS = 3_000;

/**
 * Waits up to CONNECT_WAIT_MS for the first connection. A Redis that is down at start does not
 * stop the server: it serves with the store-error policy while ioredis keeps reconnecting.
 */
async function connectWithin(client: Redis | Cluster, url?: string): Promise<void> {
  // The first error tells more than a timeout (a TLS record where a reply was due, say).
  let first: Error | undefined;
  const remember = (error: Error): void => {
    first ??= error;
  };
  client.on('error', remember);
  await within(client.connect(), CONNECT_WAIT_MS)
    .catch((error: Error) => {
      const hint = url ? tlsHint(url, first ?? error) : undefined;
      log('warn', 'Redis not reachable yet; serving with the store-error policy until it is', {
        error: error.message,
        ...(first && first !== error ? { cause: first.message } : {}),
        ...(hint ? { hint } : {}),
      });
    })
    .finally(() => client.off('error', remember));
}

const quit = (client: Redis | Cluster) => async (): Promise<void> => {
  if (client.status !== 'ready') return client.disconnect();
  await client.quit().catch(() => client.disconnect());
};

/**
 * `local` is the library's `deny` with a memory store to decide first while Redis fails, one
 * that counts every hit Redis admits through this process too (see `localFallback`).
 */
function storeOptions(
  store: RateLimitStore,
  policy: ServerStoreErrorPolicy,
): Pick<RateLimitDirectiveOptions, 'store' | 'onStoreError' | 'fallbackStore'> {
  if (policy === 'local') return { ...localFallback(store), onStoreError: 'deny' };
  return { store, onStoreError: policy, fallbackStore: undefined };
}

let stopServer: () => Promise<void> = async () => undefined;
let closeStore: () => Promise<void> = async () => undefined;
let stopping = false;

/** SIGINT/SIGTERM: stop taking requests, let those in flight finish, close Redis, exit. */
function shutdown(signal: string): void {
  if (stopping) return;
  stopping = true;
  log('info', 'shutting down', { signal });
  stopServer()
    .then(() => closeStore())
    .then(
      () => {
        log('info', 'stopped');
        process.exit(0);
      },
      (error: unknown) => {
        log('error', 'shutdown failed', { error: String(error) });
        process.exit(1);
      },
    );
}

async function main(): Promise<void> {
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  const config = readServerConfig(process.env);
  const data = loadCtfData(config.dataPath);
  if (config.dryRun) {
    log('warn', 'RATE_LIMIT_DRY_RUN=true: limits are measured and reported but never enforced');
  }
  const backend = await connect(config);
  const stores = storeOptions(backend.store, config.onStoreError);
  // the store's own connection (and a local fallback's memory), then the client it was made from
  closeStore = async () => {
    await stores.store.close?.();
    await backend.close();
  };
  const storeFailed = throttled('error', 'rate limit store failed');
  const server = await startCtfServer({
    data,
    port: config.port,
    host: config.host,
    headersTimeoutMs: config.headersTimeoutMs,
    requestTimeoutMs: config.requestTimeoutMs,
    ...stores,
    dryRun: config.dryRun,
    storeReachable: () => backend.reachable(),
    timeoutMs: config.rateLimitTimeoutMs,
    trustProxy: config.trustProxy,
    introspection: config.introspection,
    onDecision: (event) => {
      if (event.error) {
        storeFailed({
          field: event.field,
          error: event.error.message,
          allowed: event.allowed,
          decidedBy: event.decidedBy,
        });
      }
    },
  });
  const { address, family, port } = server.address;
  const bound = family === 'IPv6' ? `[${address}]:${port}` : `${address}:${port}`;
  const page = server.url.replace(/graphql$/, '');
  log(
    'info',
    `CTF server listening on ${bound}: the team page at ${page}, GraphQL at ${server.url}`,
    {
      url: server.url,
      page,
      address,
      port,
      store: backend.describe,
      onStoreError: config.onStoreError,
      dryRun: config.dryRun,
      trustProxy: config.trustProxy,
      introspection: config.introspection,
      pid: process.pid,
    },
  );

  stopServer = () => server.stop();
}

let started = false;

/** Stops the process with one line: a setting that cannot work. */
function fail(message: string): never {
  log('error', started ? 'CTF server stopped' : 'CTF server failed to start', { error: message });
  process.exit(1);
}

main().then(
  () => {
    started = true;
  },
  (error: unknown) => fail(error instanceof Error ? error.message : String(error)),
);
