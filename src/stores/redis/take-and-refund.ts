import type { PackedHit, ScriptDecision } from './hit-script';
import { hitError } from '../hit-checks';
import { claimRefund } from '../refund-claims';
import type { RateLimitStore, TakeDecision } from '../store';

/*
 * How an operation's cost budget is charged on Redis. `take` is an ordinary hit of one limit
 * that asks the hit script for its receipt: it joins the batches of its identity like any other
 * hit, so on a Cluster (one identity, one hash tag) it is decided on its master in one call.
 * `refund` returns part of it in the same batches, with the arithmetic of each algorithm's
 * `refund` (lua/lib/), which finds exactly the window, the log entries or the bucket time
 * the take took from: units taken in a window that has since ended count for nothing and are
 * not given to the next one.
 */

/** One hit the store queues for its next batch. */
export type QueueHit = (hit: PackedHit) => Promise<ScriptDecision>;

/**
 * `take`, `refund` and `refundAndPeek` of a Redis store, over its batches: a refund joins
 * the batches like a hit (lua/hit.lua refunds, then reads the limit's state), so settling
 * an operation costs its share of one script call.
 */
export function redisTakeAndRefund(
  queue: QueueHit,
): Required<Pick<RateLimitStore, 'take' | 'refund' | 'refundAndPeek'>> {
  const refundAndPeek: RefundAndPeek = (identity, rule, receipt, units) => {
    const misuse = claimRefund(identity, rule, receipt, units);
    if (misuse) return Promise.reject(misuse);
    const refund = { units: [units], taken: [receipt.units], receipts: [receipt.mark] };
    return queue({ kind: 'refund', identity, rules: [rule], refund }).then(
      ({ limits, refunded }) => {
        const state = limits[0];
        if (!state || !refunded) throw new Error('The rate limit script answered no refund');
        return { refunded: refunded[0] === true, state };
      },
    );
  };
  return {
    take(identity, rule, units): Promise<TakeDecision> {
      const misuse = hitError(identity, [rule], [units]);
      if (misuse) return Promise.reject(misuse);
      return queue({ kind: 'take', identity, rules: [rule], costs: [units] }).then(
        ({ allowed, limits, receipts }) => {
          const mark = receipts?.[0];
          return mark ? { allowed, limits, receipt: { units, mark } } : { allowed, limits };
        },
      );
    },
    refundAndPeek,
    refund: (identity, rule, receipt, units) =>
      refundAndPeek(identity, rule, receipt, units).then(({ refunded }) => refunded),
  };
}

type RefundAndPeek = NonNullable<RateLimitStore['refundAndPeek']>;
