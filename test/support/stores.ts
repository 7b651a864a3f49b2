import {
  createMemoryStore,
  createRedisStore,
  type RateLimitRule,
  type RateLimitStore,
  type RedisStoreOptions,
} from '../../src';
import { connectRedis, uniquePrefix, waitFor } from './redis';

/**
 * A Redis store whose own connection is open: the store opens it when it is made, and a test
 * that releases hits at once on a busy machine would otherwise see them fail, unsent, after
 * `connectWaitMs`. A peek counts nothing.
 */
export async function openedRedisStore(options: RedisStoreOptions): Promise<RateLimitStore> {
  const store = createRedisStore(options);
  const probe: RateLimitRule = {
    action: 'opened',
    algorithm: 'FIXED_WINDOW',
    windowSeconds: 1,
    limit: 1,
    cost: 1,
  };
  await waitFor('the store to open its connection', async () =>
    Array.isArray(await store.peek?.('opened', [probe])),
  );
  return store;
}

/**
 * A store under test and, for concurrency tests, more handles on the same counters: for Redis,
 * each handle is a store on its own connection sharing the prefix; for memory, the one store.
 */
export interface StoreUnderTest {
  readonly store: RateLimitStore;
  handle(): Promise<RateLimitStore>;
}

export type StoreKind = 'redis' | 'memory';

export const STORE_KINDS: readonly StoreKind[] = ['redis', 'memory'];

/** A fresh, empty store of `kind` (Redis: a new key prefix on the run's Redis). */
export async function freshStore(kind: StoreKind): Promise<StoreUnderTest> {
  if (kind === 'memory') {
    const store = createMemoryStore();
    return { store, handle: async () => store };
  }
  const prefix = uniquePrefix();
  const store = await openedRedisStore({ client: await connectRedis(), prefix });
  return { store, handle: async () => openedRedisStore({ client: await connectRedis(), prefix }) };
}
