import { createMemoryStore, type RateLimitStore } from 'graphql-atomic-rate-limit';

/** The stores `RATE_LIMIT_ON_STORE_ERROR=local` gives the directive. */
export interface LocalFallback {
  /** `store`, whose every hit it admits is also counted in the fallback's memory. */
  readonly store: RateLimitStore;
  /** The memory store that decides while `store` fails. */
  readonly fallbackStore: RateLimitStore;
}

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
 */
export function localFallback(store: RateLimitStore): LocalFallback {
  const memory = createMemoryStore();
  const mirrored: RateLimitStore = {
    async hit(identity, rules, costs) {
      const decision = await store.hit(identity, rules, costs);
      if (decision.allowed) {
        // Counted whatever the memory's own window says; a hit it finds full leaves it full.
        await memory.hit(identity, rules, costs).catch(() => undefined);
      }
      return decision;
    },
    async reset(identity, rules) {
      await store.reset?.(identity, rules);
      await memory.reset?.(identity, rules);
    },
  };
  if (store.peek) mirrored.peek = store.peek.bind(store);
  if (store.take) mirrored.take = store.take.bind(store);
  if (store.refund) mirrored.refund = store.refund.bind(store);
  if (!store.reset) delete mirrored.reset;
  return { store: mirrored, fallbackStore: memory };
}
