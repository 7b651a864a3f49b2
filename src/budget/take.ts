import type { RateLimitRule } from '../rate-limit-rule';
import type { Decider, Outcome } from '../decider';
import type { RateLimitStore, TakeDecision, TakeReceipt } from '../stores/store';

/** A take from the budget: the decision, who made it, and the store to refund. */
export type TakeOutcome = Outcome<TakeDecision>;

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
 * The budget's calls to the stores, through the directive's decider: the same bounds and
 * fallback as a field's hit. A store without `take` is charged by `hit`, and gives nothing back
 * (no receipt).
 */
export function budgetStore(decider: Decider, rule: RateLimitRule): BudgetStore {
  const takeOn = (on: RateLimitStore, identity: string, units: number): Promise<TakeDecision> =>
    on.take ? on.take(identity, rule, units) : on.hit(identity, [rule], [units]);
  return {
    take: (identity, units) => decider.decide((on) => takeOn(on, identity, units)),
    async refund({ store: on, identity, receipt }, units) {
      if (!on.refund) return false;
      // a refund that fails leaves its points taken until they come back on their own: the
      // budget errs on the side of the points it is sure of
      return decider.bounded(on.refund(identity, rule, receipt, units)).catch(() => false);
    },
  };
}
