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
}

/**
 * Where counters live. `hit` decides all `rules` for `identity` as one atomic step: the hit
 * passes only if every rule allows it, and then consumes all of them; otherwise none.
 */
export interface RateLimitStore {
  hit(identity: string, rules: readonly RateLimitRule[]): Promise<Decision>;
}

/**
 * Why `hit(identity, rules)` cannot be counted, or undefined when it can: the stores check what
 * they are given, as `hit` may be called without a directive. Cheap per hit: each rule object is
 * checked once.
 */
export function hitError(
  identity: string,
  rules: readonly RateLimitRule[],
): RateLimitConfigError | undefined {
  if (typeof identity !== 'string') {
    return new RateLimitConfigError(`hit: identity must be a string, got ${typeof identity}`);
  }
  return rulesError(rules);
}
