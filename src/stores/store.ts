import { rulesError, type RateLimitRule } from '../algorithms';
import { RateLimitConfigError } from '../errors';

/** The state of one limit after a hit was decided. */
export interface LimitState {
  /** Units left after this hit (before it, when the hit was blocked). */
  readonly remaining: number;
  /** Milliseconds until the limit is whole again. */
  readonly resetMs: number;
  /** Milliseconds until a hit of this cost would pass this limit; 0 when it passes now. */
  readonly retryAfterMs: number;
}

/** The outcome of one hit against every limit of a field, decided atomically. */
export interface Decision {
  /** True when every limit allowed the hit and all of them were consumed. */
  readonly allowed: boolean;
  /** One state per rule, in the order the rules were given. */
  readonly limits: readonly LimitState[];
  /** True when the store answered from its cache of blocks, without asking its backend. */
  readonly cached?: boolean | undefined;
}

/**
 * Where counters live. `hit` decides all `rules` as one step: the hit passes only if every rule
 * allows it, and then consumes all of them; otherwise none.
 */
export interface RateLimitStore {
  /**
   * @param identity who the hit counts against: one identity for every rule, or one per rule
   *   (in rule order) when the field's limits count against several sources
   * @param costs units the hit takes of each rule, in rule order. @default each rule's `cost`
   */
  hit(
    identity: string | readonly string[],
    rules: readonly RateLimitRule[],
    costs?: readonly number[],
  ): Promise<Decision>;
  /** The state of each of `rules` for `identity`, counting nothing. */
  peek?(identity: string, rules: readonly RateLimitRule[]): Promise<LimitState[]>;
  /** Makes each of `rules` whole again for `identity`. */
  reset?(identity: string, rules: readonly RateLimitRule[]): Promise<void>;
}

/** The identity `rules[i]` counts against, from what `hit` was given. */
export const identityAt = (identity: string | readonly string[], i: number): string =>
  typeof identity === 'string' ? identity : (identity[i] as string);

/**
 * Why `hit(identity, rules, costs)` cannot be counted, or undefined when it can: the stores check
 * what they are given, as `hit` may be called without a directive. Cheap per hit: each rule
 * object is checked once.
 */
export function hitError(
  identity: string | readonly string[],
  rules: readonly RateLimitRule[],
  costs?: readonly number[],
): RateLimitConfigError | undefined {
  if (typeof identity !== 'string') {
    if (!Array.isArray(identity) || identity.length !== rules.length) {
      return new RateLimitConfigError(
        'hit: identity must be a string, or an array of one string per rule',
      );
    }
    if (identity.some((id) => typeof id !== 'string')) {
      return new RateLimitConfigError('hit: every identity must be a string');
    }
  }
  if (costs !== undefined) {
    if (!Array.isArray(costs) || costs.length !== rules.length) {
      return new RateLimitConfigError('hit: costs must hold one number per rule');
    }
    for (let i = 0; i < costs.length; i++) {
      const cost = costs[i];
      const limit = (rules[i] as RateLimitRule).limit;
      if (!Number.isSafeInteger(cost) || (cost as number) < 1 || (cost as number) > limit) {
        return new RateLimitConfigError(
          `hit: costs[${i}] must be a whole number from 1 to the limit ${limit}, got ${String(cost)}`,
        );
      }
    }
  }
  return rulesError(rules);
}
