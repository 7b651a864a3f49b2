import { rulesError, type RateLimitRule } from '../rate-limit-rule';
import { RateLimitConfigError } from '../errors';

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
