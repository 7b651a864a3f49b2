import type { RateLimitRule } from '../algorithms';
import type { DecidedBy } from '../decisions';
import { StoreTimeoutError } from '../errors';
import type { Config } from '../options';
import type { RateLimitStore, TakeDecision, TakeReceipt } from '../stores/store';
import { createDeadlines } from '../timeout';

/** A take from the budget: the decision, who made it, and the store to refund. */
export interface TakeOutcome {
  readonly decision: TakeDecision;
  readonly decidedBy: DecidedBy;
  /** The store's failure, when the fallback store decided. */
  readonly error?: Error | undefined;
  /** The store that took, which alone can give back what it took. */
  readonly store: RateLimitStore;
}

/** Takes and gives back points of one budget, each call bounded by `timeoutMs`. */
export interface BudgetStore {
  /** Takes `units` for `identity` on the store, else on the fallback; rejects when neither decided. */
  take(identity: string, units: number): Promise<TakeOutcome>;
  /** Gives `units` of a take back; false when nothing was, or the store failed or took too long. */
  refund(taken: Taken, units: number): Promise<boolean>;
}

/** What a take that passed took, for its refund. */
export interface Taken {
  readonly store: RateLimitStore;
  readonly identity: string;
  readonly receipt: TakeReceipt;
}

/**
 * The budget's calls to the stores, with the same bounds and fallback as a field's hit. A store
 * without `take` is charged by `hit`, and gives nothing back (no receipt).
 */
export function budgetStore(config: Config, rule: RateLimitRule): BudgetStore {
  const { store, fallbackStore, timeoutMs } = config;
  const bounded = createDeadlines(timeoutMs, () => new StoreTimeoutError(timeoutMs));
  const takeOn = (on: RateLimitStore, identity: string, units: number): Promise<TakeDecision> =>
    on.take ? on.take(identity, rule, units) : on.hit(identity, [rule], [units]);
  return {
    async take(identity, units) {
      try {
        const decision = await bounded(takeOn(store, identity, units));
        return { decision, decidedBy: decision.cached ? 'cache' : 'store', store };
      } catch (caught) {
        const error = caught instanceof Error ? caught : new Error(String(caught));
        if (!fallbackStore) throw error;
        try {
          const decision = await bounded(takeOn(fallbackStore, identity, units));
          return { decision, decidedBy: 'fallback', error, store: fallbackStore };
        } catch {
          throw error;
        }
      }
    },
    async refund({ store: on, identity, receipt }, units) {
      if (!on.refund) return false;
      // a refund that fails leaves its points taken until they come back on their own: the
      // budget errs on the side of the points it is sure of
      return bounded(on.refund(identity, rule, receipt, units)).catch(() => false);
    },
  };
}
