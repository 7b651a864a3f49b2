import type { RateLimitRule } from './algorithms';
import type { DecidedBy } from './decisions';
import { StoreTimeoutError } from './errors';
import type { Config } from './options';
import type { Decision } from './stores/store';
import { createDeadlines } from './timeout';

/** A decision, who made it, and the store's failure when the fallback made it. */
export interface Outcome {
  readonly decision: Decision;
  readonly decidedBy: DecidedBy;
  readonly error?: Error | undefined;
}

/**
 * Decides a hit on the store, bounded by `timeoutMs`; when the store fails or times out and a
 * `fallbackStore` is set, on the fallback. Rejects with the store's error when nothing decided.
 */
export function decider(
  config: Config,
): (
  identity: string | readonly string[],
  rules: readonly RateLimitRule[],
  costs: readonly number[] | undefined,
) => Promise<Outcome> {
  const { store, fallbackStore, timeoutMs } = config;
  const bounded = createDeadlines(timeoutMs, () => new StoreTimeoutError(timeoutMs));
  return async (identity, rules, costs) => {
    try {
      const decision = await bounded(store.hit(identity, rules, costs));
      return { decision, decidedBy: decision.cached ? 'cache' : 'store' };
    } catch (caught) {
      const error = caught instanceof Error ? caught : new Error(String(caught));
      if (!fallbackStore) throw error;
      try {
        const decision = await bounded(fallbackStore.hit(identity, rules, costs));
        return { decision, decidedBy: 'fallback', error };
      } catch {
        throw error;
      }
    }
  };
}
