import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';

import { Redis, type RedisOptions } from 'ioredis';

import { onPath } from '../../kit/processes';
import { startRedisServer, type RedisProcess } from '../../kit/redis-server';

export { keysUnder, startRedisServer, type RedisProcess } from '../../kit/redis-server';
export { waitFor } from '../../kit/processes';
import { within } from './processes';

/** A Redis the tests may use, and how to let it go. */
export interface ProvidedRedis {
  readonly url: string;
  readonly source: 'REDIS_URL' | 'testcontainers' | 'redis-server';
  stop(): Promise<void>;
}

export const NO_REDIS_MESSAGE =
  'No Redis for the tests: set REDIS_URL=redis://host:port, start a Docker engine (testcontainers), ' +
  'or install redis-server on PATH (Debian: apt-get install redis-server).';

const REDIS_IMAGE = 'redis:7.4-alpine';

async function dockerAnswers(): Promise<boolean> {
  if (!process.env.DOCKER_HOST && !existsSync('/var/run/docker.sock')) return false;
  try {
    const { getContainerRuntimeClient } = await import('testcontainers');
    await within(getContainerRuntimeClient(), 5_000, 'the container runtime');
    return true;
  } catch {
    return false;
  }
}

/** Redis from REDIS_URL, else a testcontainers container, else redis-server on PATH; else throws one line. */
export async function provideRedis(): Promise<ProvidedRedis> {
  const fromEnv = process.env.REDIS_URL;
  if (fromEnv) return { url: fromEnv, source: 'REDIS_URL', stop: async () => undefined };
  if (await dockerAnswers()) {
    const { GenericContainer, Wait } = await import('testcontainers');
    const container = await new GenericContainer(REDIS_IMAGE)
      .withExposedPorts(6379)
      .withWaitStrategy(Wait.forLogMessage(/Ready to accept connections/))
      .start();
    return {
      url: `redis://${container.getHost()}:${container.getMappedPort(6379)}`,
      source: 'testcontainers',
      stop: async () => {
        await container.stop();
      },
    };
  }
  if (onPath('redis-server')) {
    const server = await startRedisServer();
    return { url: server.url, source: 'redis-server', stop: () => server.stop() };
  }
  throw new Error(NO_REDIS_MESSAGE);
}

/** The Redis the global setup provided for this run. */
export function redisUrl(): string {
  const url = process.env.REDIS_URL;
  if (!url) throw new Error(NO_REDIS_MESSAGE);
  return url;
}

const clients = new Set<Redis>();

/**
 * A new connection to the run's Redis (or `url`); closed by {@link closeClients}. Its socket is
 * destroyed as soon as it is let go of (`disconnectTimeout: 0`): ioredis otherwise arms a 2 s
 * timer to destroy a socket that does not close, and one already closed (its Redis stopped by
 * the test) never closes again, so the timer outlived the tests and held the jest worker
 * ("a worker process has failed to exit gracefully").
 */
export async function connectRedis(options: RedisOptions = {}, url = redisUrl()): Promise<Redis> {
  const client = new Redis(url, { lazyConnect: true, disconnectTimeout: 0, ...options });
  clients.add(client);
  await client.connect();
  return client;
}

/** Closes every connection {@link connectRedis} opened. */
export async function closeClients(): Promise<void> {
  await Promise.all(
    [...clients].map(async (c) => {
      clients.delete(c);
      await c.quit().catch(() => c.disconnect());
    }),
  );
}

/** A key prefix no other test uses. */
export function uniquePrefix(): string {
  return `t-${randomUUID()}:`;
}

/** Script calls (EVALSHA and EVAL) the Redis `admin` talks to has run, from INFO commandstats. */
export async function scriptCalls(admin: Pick<Redis, 'info'>): Promise<number> {
  const stats = await admin.info('commandstats');
  let calls = 0;
  for (const m of stats.matchAll(/cmdstat_(?:eval|evalsha|fcall|fcall_ro):calls=(\d+)/g))
    calls += Number(m[1]);
  return calls;
}

/**
 * A redis-server of the calling test file's own, started before its tests and stopped after
 * them (with every connection {@link connectRedis} opened), so that what its tests count (script
 * calls, keys) is theirs alone. Call at the top of a file; `url()` is its address.
 */
export function ownRedis(): { url(): string } {
  let redis: RedisProcess | undefined;
  beforeAll(async () => {
    redis = await startRedisServer();
  });
  afterAll(async () => {
    await closeClients();
    await redis?.stop();
  });
  return {
    url() {
      if (!redis) throw new Error('ownRedis: its redis-server has not started');
      return redis.url;
    },
  };
}
