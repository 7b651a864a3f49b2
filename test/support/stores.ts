import { resolve } from 'node:path';

import {
  createMemoryStore,
  createRedisStore,
  type RateLimitRule,
  type RateLimitStore,
  type RedisStoreOptions,
} from '../../src';
import { connectRedis, uniquePrefix, waitFor } from './redis';

/**
 * `store` (on Redis) once `store.ready()` resolved (its own connection open, its Lua loaded on
 * every master of a Cluster) and a peek of each master answered: a test that releases hits at
 * once on a busy machine would otherwise see them fail, unsent after `connectWaitMs`. Peeks
 * count nothing: 64 identities, so that on
 * three masters each is read (each misses with odds of (2/3)^64).
 */
export async function opened(store: RateLimitStore): Promise<RateLimitStore> {
  const probe: RateLimitRule = {
    action: 'opened',
    algorithm: 'FIXED_WINDOW',
    windowSeconds: 1,
    limit: 1,
    cost: 1,
  };
  const peek = store.peek?.bind(store);
  if (!peek) throw new Error('opened: a Redis store peeks');
  await store.ready?.();
  const identities = Array.from({ length: 64 }, (_, i) => `opened-${i}`);
  await waitFor('the store to open its connection', async () => {
    const read = await Promise.all(identities.map((id) => peek(id, [probe]).catch(() => null)));
    return read.every(Array.isArray);
  });
  return store;
}

/** A Redis store made from `options`, {@link opened}. */
export function openedRedisStore(options: RedisStoreOptions): Promise<RateLimitStore> {
  return opened(createRedisStore(options));
}

/**
 * A store under test and, for concurrency tests, more handles on the same counters: for Redis,
 * each handle is a store on its own connection sharing the prefix; for memory, the one store.
 */
export interface StoreUnderTest {
  readonly store: RateLimitStore;
  handle(): Promise<RateLimitStore>;
}

export type StoreKind = 'redis' | 'memory' | 'custom';

/**
 * `CUSTOM_STORE=<module>`: the store tests run against a custom store instead of the library's
 * (docs/custom-store.md). The module exports `createStore(namespace)`: stores made with one
 * namespace share their counters, and a new namespace starts empty.
 */
const CUSTOM_STORE = process.env.CUSTOM_STORE;

export const STORE_KINDS: readonly StoreKind[] = CUSTOM_STORE ? ['custom'] : ['redis', 'memory'];

/** What a `CUSTOM_STORE` module exports. */
interface CustomStoreModule {
  readonly createStore: (namespace: string) => RateLimitStore | Promise<RateLimitStore>;
}

/** A fresh, empty store of `kind` (Redis: a new key prefix on the run's Redis). */
export async function freshStore(kind: StoreKind): Promise<StoreUnderTest> {
  if (kind === 'custom') {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { createStore } = require(resolve(CUSTOM_STORE ?? '')) as CustomStoreModule;
    const namespace = uniquePrefix();
    return { store: await createStore(namespace), handle: async () => createStore(namespace) };
  }
  if (kind === 'memory') {
    const store = createMemoryStore();
    return { store, handle: async () => store };
  }
  const prefix = uniquePrefix();
  const store = await openedRedisStore({ client: await connectRedis(), prefix });
  return { store, handle: async () => openedRedisStore({ client: await connectRedis(), prefix }) };
}
