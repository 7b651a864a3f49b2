import { createMemoryStore, type Lease, type RateLimitStore } from 'graphql-atomic-rate-limit';

/** The stores `RATE_LIMIT_ON_STORE_ERROR=local` gives the directive. */
export interface LocalFallback {
  /** `store`, whose every hit it admits is also counted in the fallback's memory. */
  readonly store: RateLimitStore;
  /** The memory store that decides while `store` fails. */
  readonly fallbackStore: RateLimitStore;
}

/** The methods of the store contract that `localFallback` changes; every other one is passed. */
type Mirrored = 'hit' | 'reset' | 'close' | 'release' | 'renew';
/** The contract's other methods, passed to `store` as they are. */
const PASSED = [
  'peek',
  'take',
  'refund',
  'refundAndPeek',
  'ready',
  'settingUp',
  'admitOperation',
  'settleOperation',
] as const;
/**
 * Compiles only while `PASSED` and `Mirrored` name every method of `RateLimitStore`: a method
 * added to the contract cannot be dropped here unnoticed (a budget would then settle in two
 * calls where the store has one, or a store would never be closed).
 */
const everyMethod: Exclude<keyof RateLimitStore, Mirrored | (typeof PASSED)[number]> extends never
  ? true
  : never = true;
void everyMethod;

/**
 * A memory fallback that already knows this process's hits when Redis fails. A bare memory
 * store counts only the hits it decided itself: a team that had 2 of its 3 attempts from Redis
 * got 3 more from the fallback once Redis froze (5 in 3 s against 3 a minute). Here every hit
 * that Redis admits through this process is also counted in memory, under the same rules, so
 * the fallback starts from what this process admitted, not from zero: per process, per
 * identity, at most `limit` hits pass in any window of the memory's counters (opened at the
 * first hit this process admitted), whoever decided them. Other processes' hits are not known
 * here (N processes: up to N times the limit while Redis fails), nor are the budget's takes,
 * which the memory counts only while it decides them.
 *
 * The returned `store` stands in for `store`: every method of the contract that `store` has is
 * there (`take`, `refundAndPeek`: a budget settles in one call), and its `close` closes `store`
 * and the memory.
 */
export function localFallback(store: RateLimitStore, memory = createMemoryStore()): LocalFallback {
  // the memory's slots of a CONCURRENCY hit Redis admitted, released and renewed with Redis'
  const memoryLeases = new WeakMap<Lease, Lease>();
  const mirrored: RateLimitStore = {
    async hit(identity, rules, costs) {
      const decision = await store.hit(identity, rules, costs);
      if (decision.allowed) {
        // Counted whatever the memory's own window says; a hit it finds full leaves it full.
        const copy = await memory.hit(identity, rules, costs).catch(() => undefined);
        if (decision.lease && copy?.lease) memoryLeases.set(decision.lease, copy.lease);
      }
      return decision;
    },
    async release(lease) {
      const copy = memoryLeases.get(lease);
      await Promise.all([store.release?.(lease), copy && memory.release?.(copy)]);
    },
    async renew(lease) {
      const copy = memoryLeases.get(lease);
      if (copy) await memory.renew?.(copy);
      return (await store.renew?.(lease)) ?? false;
    },
    async close() {
      await Promise.all([store.close?.(), memory.close()]);
    },
  };
  if (store.reset) {
    const reset = store.reset.bind(store);
    mirrored.reset = async (identity, rules) => {
      await reset(identity, rules);
      await memory.reset?.(identity, rules);
    };
  }
  for (const method of PASSED) {
    const passed = store[method]?.bind(store);
    if (passed) Object.assign(mirrored, { [method]: passed });
  }
  return { store: mirrored, fallbackStore: memory };
}
