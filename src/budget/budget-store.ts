import type { RateLimitRule } from '../rate-limit-rule';
import type { Decider, Outcome } from '../decide/decider';
import type { LimitState, RateLimitStore, TakeDecision, TakeReceipt } from '../stores/store';

/** A take from the budget: the decision, who made it, and the store to refund. */
export type TakeOutcome = Outcome<TakeDecision>;

/** Takes and refunds points of one budget, each call bounded by `timeoutMs`. */
export interface BudgetStore {
  /** Takes `units` for `identity` on the store, else on the fallback; rejects when neither decided. */
  take(identity: string, units: number): Promise<TakeOutcome>;
  /**
   * Gives `units` (more than 0) of a take back (nothing without a receipt), then reads the
   * budget as it stands: undefined when it cannot be read (the store has no `peek`, failed or
   * took too long).
   */
  refund(taken: Taken, units: number): Promise<LimitState | undefined>;
}

/** What a take that passed took, for its refund. */
export interface Taken {
  readonly store: RateLimitStore;
  readonly identity: string;
  /** Undefined when the store took by `hit`, which refunds nothing. */
  readonly receipt: TakeReceipt | undefined;
}

/**
 * The budget's calls to the stores, through the directive's decider: the same bounds and
 * fallback as a field's hit. A store without `take` is charged by `hit`, and refunds nothing
 * (no receipt).
 */
export function budgetStore(decider: Decider, rule: RateLimitRule): BudgetStore {
  const takeOn = (on: RateLimitStore, identity: string, units: number): Promise<TakeDecision> =>
    on.take ? on.take(identity, rule, units) : on.hit(identity, [rule], [units]);
  return {
    take: (identity, units) => decider.decide((on) => takeOn(on, identity, units)),
    async refund({ store: on, identity, receipt }, units) {
      if (receipt && on.refundAndPeek) {
        // one step: the refund answers the state it left
        const refunded = decider.bounded(on.refundAndPeek(identity, rule, receipt, units));
        return refunded.then(({ state }) => state).catch(() => undefined);
      }
      if (receipt && on.refund) {
        // a refund that fails leaves its points taken until they come back on their own: the
        // budget errs on the side of the points it is sure of
        await decider.bounded(on.refund(identity, rule, receipt, units)).catch(() => false);
      }
      // read after the refund, never computed from the take: other operations took or gave
      // back meanwhile, a reset or a new window may have come
      if (!on.peek) return undefined;
      const read = decider.bounded(on.peek(identity, [rule]));
      return read.then((states) => states[0]).catch(() => undefined);
    },
  };
}
