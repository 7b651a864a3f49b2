import { Cluster, Redis } from 'ioredis';

import {
  createMemoryStore,
  createRedisStore,
  type RateLimitStore,
  type StoreErrorPolicy,
} from 'graphql-atomic-rate-limit';
import { startCtfServer } from './app';
import { readServerConfig, type ServerConfig, type ServerStoreErrorPolicy } from './config';
import { loadCtfData } from './data';
import { within } from './deadline';
import { log, throttled } from './log';

/*
 * `npm start`: the reference CTF server, configured by the environment (see config.ts). A value
 * it does not understand stops it at once with one line and exit code 1.
 */

/**
 * Client options the store relies on: a call made while Redis is unreachable fails at once
 * instead of waiting in the offline queue (where it could run after its request gave up), and
 * a script already sent when the connection dropped is never resent (its outcome is unknown,
 * and resending it could count one hit twice).
 */
const CLIENT_OPTIONS = {
  enableOfflineQueue: false,
  autoResendUnfulfilledCommands: false,
  maxRetriesPerRequest: 0,
  lazyConnect: true,
} as const;

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
      nodes.split(',').map((n) => {
        const [host, port] = n.trim().split(':');
        return { host: host || '127.0.0.1', port: Number(port) || 6379 };
      }),
      { lazyConnect: true, redisOptions: { autoResendUnfulfilledCommands: false } },
    );
    watch(cluster, 'Redis Cluster');
    await connectWithin(cluster);
    return {
      store: createRedisStore({ client: cluster, prefix }),
      describe: `Redis Cluster ${nodes}`,
      close: quit(cluster),
      reachable: pings(cluster),
    };
  }
  if (url) {
    const redis = new Redis(url, CLIENT_OPTIONS);
    watch(redis, 'Redis');
    await connectWithin(redis);
    return {
      store: createRedisStore({ client: redis, prefix }),
      describe: `Redis ${redactUrl(url)}`,
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

/** Connection trouble is logged (throttled); ioredis keeps reconnecting on its own. */
function watch(client: Redis | Cluster, name: string): void {
  const lost = throttled('warn', `${name} connection error`);
  client.on('error', (error: Error) => lost({ error: error.message }));
  client.on('ready', () => log('info', `${name} ready`));
}

const CONNECT_WAIT_MS = 3_000;

/**
 * Waits up to CONNECT_WAIT_MS for the first connection. A Redis that is down at start does not
 * stop the server: it serves with the store-error policy while ioredis keeps reconnecting.
 */
async function connectWithin(client: Redis | Cluster): Promise<void> {
  await within(client.connect(), CONNECT_WAIT_MS).catch((error: Error) => {
    log('warn', 'Redis not reachable yet; serving with the store-error policy until it is', {
      error: error.message,
    });
  });
}

const quit = (client: Redis | Cluster) => async (): Promise<void> => {
  if (client.status !== 'ready') return client.disconnect();
  await client.quit().catch(() => client.disconnect());
};

function redactUrl(url: string): string {
  return url.replace(/\/\/[^@/]*@/, '//***@');
}

/** `local` is the library's `deny` with a memory store to decide first while Redis fails. */
function storeErrorOptions(policy: ServerStoreErrorPolicy): {
  onStoreError: StoreErrorPolicy;
  fallbackStore: RateLimitStore | undefined;
} {
  if (policy === 'local') return { onStoreError: 'deny', fallbackStore: createMemoryStore() };
  return { onStoreError: policy, fallbackStore: undefined };
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
  closeStore = () => backend.close();
  const storeFailed = throttled('error', 'rate limit store failed');
  const server = await startCtfServer({
    data,
    store: backend.store,
    port: config.port,
    host: config.host,
    headersTimeoutMs: config.headersTimeoutMs,
    requestTimeoutMs: config.requestTimeoutMs,
    ...storeErrorOptions(config.onStoreError),
    dryRun: config.dryRun,
    storeReachable: () => backend.reachable(),
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
  log('info', `CTF server listening on ${bound}: ${server.url}`, {
    url: server.url,
    address,
    port,
    store: backend.describe,
    onStoreError: config.onStoreError,
    dryRun: config.dryRun,
    pid: process.pid,
  });

  stopServer = () => server.stop();
}

main().catch((error: unknown) => {
  log('error', 'CTF server failed to start', {
    error: error instanceof Error ? error.message : String(error),
  });
  process.exit(1);
});
