import type { RateLimitRule } from '../../rate-limit-rule';
import { advance, ceilUs, type Entry, type ExactTime } from './entry';
import type { TakeReceipt } from '../store';

/*
 * A budget's refund on the memory store, with the arithmetic of lua/refund.lua (see there for
 * why each algorithm refunds exactly what it does): the receipt names the window (its end),
 * the log entries (their time) or the time of the take, so that nothing goes to a window, log or
 * bucket the take did not take from.
 */

/** The receipt of a take of `units` that just passed on `entry`, at `nowUs`. */
export function receiptOf(
  rule: RateLimitRule,
  entry: Entry,
  units: number,
  nowUs: number,
): TakeReceipt {
  const at = rule.algorithm === 'FIXED_WINDOW' ? entry.expiresAtUs : nowUs;
  return { units, mark: [String(at), '0'] };
}

/** What a refund did to its entry: nothing, refunded units, or left it whole (to forget). */
export type RefundOutcome = 'none' | 'refunded' | 'whole';

/** Refunds `units` of the take of `receipt` to the live `entry` of `rule` at `nowUs`. */
export function refundEntry(
  entry: Entry,
  rule: RateLimitRule,
  receipt: TakeReceipt,
  units: number,
  nowUs: number,
): RefundOutcome {
  const at = Number(receipt.mark[0]);
  const windowUs = rule.windowSeconds * 1e6;
  switch (rule.algorithm) {
    case 'FIXED_WINDOW': {
      // a window that opened after ours ends later: units of ours are only in ours
      if (entry.expiresAtUs !== at || entry.count < units) return 'none';
      entry.count -= units;
      return entry.count === 0 ? 'whole' : 'refunded';
    }
    case 'SLIDING_WINDOW': {
      // units of one time are alike and leave the window together: any `units` of them are ours
      if (at <= nowUs - windowUs) return 'none';
      let removed = 0;
      entry.log = entry.log.filter((t) => t !== at || removed++ >= units);
      if (removed === 0) return 'none';
      return entry.log.length === 0 ? 'whole' : 'refunded';
    }
    case 'TOKEN_BUCKET':
      return refundBucket(entry, rule, receipt.units, units, nowUs - at, nowUs);
    case 'CONCURRENCY':
      // a budget never counts in flight (src/options/budget-options.ts): slots are released
      return 'none';
  }
}

/** Owed: `units` intervals, but no more than the `taken` ones less the `elapsedUs` since. */
function refundBucket(
  entry: Entry,
  { limit, windowSeconds }: RateLimitRule,
  taken: number,
  units: number,
  elapsedUs: number,
  nowUs: number,
): RefundOutcome {
  const windowUs = windowSeconds * 1e6;
  const zero: ExactTime = { us: 0, rem: 0 };
  const full = advance(zero, units, windowUs, limit);
  const left = advance({ us: -elapsedUs, rem: 0 }, taken, windowUs, limit);
  const owed = left.us < full.us || (left.us === full.us && left.rem < full.rem) ? left : full;
  if (owed.us < 0 || (owed.us === 0 && owed.rem === 0)) return 'none';
  const tat = entry.tat.rem >= limit ? { us: entry.tat.us + 1, rem: 0 } : entry.tat;
  // no hit of this limit takes the TAT beyond a window ahead of its time: not ours
  if (tat.us > nowUs + windowUs) return 'none';
  let us = tat.us - owed.us;
  let rem = tat.rem - owed.rem;
  if (rem < 0) {
    us -= 1;
    rem += limit;
  }
  entry.tat = { us, rem };
  entry.expiresAtUs = ceilUs(entry.tat);
  return entry.expiresAtUs <= nowUs ? 'whole' : 'refunded';
}
