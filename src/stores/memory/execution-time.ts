import type { RateLimitRule } from '../../rate-limit-rule';
import type { LimitState } from '../store';

/*
 * An identity's execution time on the memory store, as lua/lib/execution-time.lua keeps it on
 * Redis: microseconds charged and not yet restored as of a time, restored continuously at
 * `limit` ms per window; what is spent may pass the limit (debt). `rule.limit` is ms per
 * `rule.windowSeconds`, `rule.cost` the ms an admission reserves.
 */

/** Time spent, as of `atUs`. */
export interface SpentTime {
  readonly spentUs: number;
  readonly atUs: number;
}

/** What is still spent of `spent` at `nowUs`. */
export function spentAt(spent: SpentTime | undefined, rule: RateLimitRule, nowUs: number): number {
  if (!spent) return 0;
  const windowMs = rule.windowSeconds * 1000;
  const left = spent.spentUs - ((nowUs - spent.atUs) * rule.limit) / windowMs;
  return left <= 0 ? 0 : Math.floor(left);
}

/** The state of a counter at `spentUs` spent; `retryAfterMs` until `reserveMs` more would fit. */
export function timeState(spentUs: number, rule: RateLimitRule, reserveMs: number): LimitState {
  // us of execution time restore at limit ms per windowSeconds * 1000 ms: whole ms of real time
  const restore = (us: number): number => Math.ceil((us * rule.windowSeconds) / rule.limit);
  const over = spentUs + reserveMs * 1000 - rule.limit * 1000;
  return {
    remaining: Math.floor((rule.limit * 1000 - spentUs) / 1000),
    resetMs: restore(spentUs),
    retryAfterMs: over > 0 ? restore(over) : 0,
  };
}
