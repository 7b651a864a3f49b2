import { createMemoryStore, createRedisStore, type RateLimitStore } from '../../src';
import { connectRedis, uniquePrefix } from './redis';

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
  const store = createRedisStore({ client: await connectRedis(), prefix });
  return { store, handle: async () => createRedisStore({ client: await connectRedis(), prefix }) };
}
