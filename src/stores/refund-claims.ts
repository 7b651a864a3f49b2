import type { RateLimitRule } from '../rate-limit-rule';
import { RateLimitConfigError } from '../errors';
import { hitError } from './hit-checks';
import type { TakeReceipt } from './store';

/** Receipts already refunded: a second refund of one take could refund someone else's units. */
const refunded = new WeakSet<TakeReceipt>();

/**
 * Why `refund(identity, rule, receipt, units)` cannot be made, or undefined when it can, in which
 * case `receipt` is spent: each take is refunded at most once.
 */
export function claimRefund(
  identity: string,
  rule: RateLimitRule,
  receipt: TakeReceipt,
  units: number,
): RateLimitConfigError | undefined {
  const taken = receipt?.units;
  if (!Number.isSafeInteger(taken) || taken < 1 || !Array.isArray(receipt.mark)) {
    return new RateLimitConfigError('refund: receipt must be one that take answered');
  }
  if (!Number.isSafeInteger(units) || units < 1 || units > taken) {
    return new RateLimitConfigError(
      `refund: units must be a whole number from 1 to the ${taken} taken, got ${String(units)}`,
    );
  }
  if (refunded.has(receipt)) return new RateLimitConfigError('refund: a take is refunded once');
  const misuse = hitError(identity, [rule]);
  if (!misuse) refunded.add(receipt);
  return misuse;
}
