import { join } from 'node:path';

import { Cluster, Redis } from 'ioredis';

import { createMemoryStore, createRedisStore, type RateLimitStore } from '../index';
import { startCtfServer } from './app';
import { loadCtfData } from './data';

/*
 * `npm start`: the reference CTF server. Environment: PORT (default 4000), HOST, CTF_DATA (a JSON
 * file; default the demo data), REDIS_URL or REDIS_CLUSTER_NODES=host:port,... (else the memory
 * store), RATE_LIMIT_PREFIX (key prefix), RATE_LIMIT_ON_STORE_ERROR ('deny' or 'allow').
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

async function connect(): Promise<{
  store: RateLimitStore;
  describe: string;
  close(): Promise<void>;
}> {
  const prefix = process.env.RATE_LIMIT_PREFIX || undefined;
  const nodes = process.env.REDIS_CLUSTER_NODES;
  const url = process.env.REDIS_URL;
  if (nodes) {
    const cluster = new Cluster(
      nodes.split(',').map((n) => {
        const [host, port] = n.trim().split(':');
        return { host: host || '127.0.0.1', port: Number(port) || 6379 };
      }),
      { lazyConnect: true, redisOptions: { autoResendUnfulfilledCommands: false } },
    );
    await cluster.connect();
    return {
      store: createRedisStore({ client: cluster, prefix }),
      describe: `Redis Cluster ${nodes}`,
      close: quit(cluster),
    };
  }
  if (url) {
    const redis = new Redis(url, CLIENT_OPTIONS);
    await redis.connect();
    return {
      store: createRedisStore({ client: redis, prefix }),
      describe: `Redis ${redactUrl(url)}`,
      close: quit(redis),
    };
  }
  console.log(
    'No REDIS_URL or REDIS_CLUSTER_NODES: using the in-process memory store (limits are not shared between processes)',
  );
  return { store: createMemoryStore(), describe: 'memory', close: async () => undefined };
}

const quit = (client: Redis | Cluster) => async (): Promise<void> => {
  await client.quit().catch(() => client.disconnect());
};

function redactUrl(url: string): string {
  return url.replace(/\/\/[^@/]*@/, '//***@');
}

async function main(): Promise<void> {
  const data = loadCtfData(
    process.env.CTF_DATA || join(__dirname, '..', '..', 'data', 'demo-ctf.json'),
  );
  const backend = await connect();
  const policy = process.env.RATE_LIMIT_ON_STORE_ERROR;
  const server = await startCtfServer({
    data,
    store: backend.store,
    port: process.env.PORT === undefined ? 4000 : Number(process.env.PORT),
    host: process.env.HOST || undefined,
    onStoreError: policy === 'allow' || policy === 'deny' ? policy : undefined,
  });
  console.log(`CTF server ready at ${server.url} (store: ${backend.describe}, pid ${process.pid})`);

  let stopping = false;
  const shutdown = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    console.log(`${signal}: shutting down`);
    server
      .stop()
      .then(() => backend.close())
      .then(
        () => process.exit(0),
        (error: unknown) => {
          console.error('Shutdown failed:', error);
          process.exit(1);
        },
      );
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
}

main().catch((error: unknown) => {
  console.error(
    `CTF server failed to start: ${error instanceof Error ? error.message : String(error)}`,
  );
  process.exit(1);
});
