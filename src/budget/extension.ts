import type { RateLimitRule } from '../rate-limit-rule';

/**
 * `extensions.cost` of a budgeted operation's response, in Shopify's shape, so that clients
 * written for Shopify's Admin API read it unchanged.
 */
export interface CostExtension {
  /** The operation's estimated cost: what was taken before it ran. */
  readonly requestedQueryCost: number;
  /** What its result cost (real list lengths); null when it did not run. */
  readonly actualQueryCost: number | null;
  readonly throttleStatus: ThrottleStatus;
}

/** The caller's budget as this response leaves it. */
export interface ThrottleStatus {
  /** The budget's `limit`. */
  readonly maximumAvailable: number;
  /**
   * Points left once this operation's unused points went back; null when no store was asked (an
   * estimate of 0, an operation too expensive to take, a store that failed).
   */
  readonly currentlyAvailable: number | null;
  /** Points that come back per second: `limit / window` (a fixed window's average). */
  readonly restoreRate: number;
}

/** The extension of an operation estimated at `estimate` on the budget of `rule`. */
export function costExtension(
  rule: RateLimitRule,
  estimate: number,
  actual: number | null,
  available: number | undefined,
): CostExtension {
  return {
    requestedQueryCost: estimate,
    actualQueryCost: actual,
    throttleStatus: {
      maximumAvailable: rule.limit,
      currentlyAvailable: available ?? null,
      restoreRate: rule.limit / rule.windowSeconds,
    },
  };
}
