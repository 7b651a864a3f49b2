import type { RateLimitRule } from '../rate-limit-rule';
import { packGiveBack, parseGiveBackReply } from './give-back-script';
import type { ScriptDecision } from './hit-script';
import { hitError, claimRefund, type RateLimitStore, type TakeDecision } from './store';

/*
 * How an operation's cost budget is charged on Redis. `take` is an ordinary hit of one limit
 * that asks the hit script for its receipt: it joins the batches of its identity like any other
 * hit, so on a Cluster (one identity, one hash tag) it is decided on its master in one call.
 * `refund` gives part of it back by lua/give-back.lua, which finds exactly the window, the log
 * entries or the bucket time the take took from: units taken in a window that has since ended
 * count for nothing and are not given to the next one.
 */

/** One hit the store queues for its next batch, asking for its receipt. */
export type QueueTake = (hit: {
  readonly identity: string;
  readonly rules: readonly RateLimitRule[];
  readonly costs: readonly number[];
  readonly receipts: true;
}) => Promise<ScriptDecision>;

/** `take` and `refund` of a Redis store, over its batches and its give-back script. */
export function redisTakeAndRefund(
  queue: QueueTake,
  runGiveBack: (...args: (string | number)[]) => Promise<unknown>,
  prefix: string,
): Required<Pick<RateLimitStore, 'take' | 'refund'>> {
  return {
    take(identity, rule, units): Promise<TakeDecision> {
      const misuse = hitError(identity, [rule], [units]);
      if (misuse) return Promise.reject(misuse);
      return queue({ identity, rules: [rule], costs: [units], receipts: true }).then(
        ({ allowed, limits, receipts }) => {
          const mark = receipts?.[0];
          return mark ? { allowed, limits, receipt: { units, mark } } : { allowed, limits };
        },
      );
    },
    async refund(identity, rule, receipt, units): Promise<boolean> {
      const misuse = claimRefund(identity, rule, receipt, units);
      if (misuse) throw misuse;
      const given = {
        identity,
        rules: [rule],
        costs: [units],
        taken: [receipt.units],
        receipts: [receipt.mark],
      };
      const { keys, argv } = packGiveBack(prefix, given);
      const [done] = parseGiveBackReply(await runGiveBack(keys.length, ...keys, ...argv), given);
      return done === true;
    },
  };
}
