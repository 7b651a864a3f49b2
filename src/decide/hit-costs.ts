import { RateLimitCostExceededError } from '../errors';
import type { FieldRule } from '../schema/field-rules';

/**
 * Units per rule for a hit, when any rule takes its cost from an argument: `cost` times the
 * argument's value (at least 1; `null` counts as 1). Throws RATE_LIMIT_COST_EXCEEDED for a hit
 * that no wait could let through, before anything is counted.
 */
export function costsOf(
  rules: readonly FieldRule[],
): ((args: Record<string, unknown>) => number[]) | undefined {
  if (!rules.some((r) => r.costArg !== undefined)) return undefined;
  return (args) =>
    rules.map((rule) => {
      const value = rule.costArg === undefined ? 1 : args[rule.costArg];
      const cost = rule.cost * (typeof value === 'number' && value > 1 ? value : 1);
      if (cost > rule.limit) {
        throw new RateLimitCostExceededError({ action: rule.action, limit: rule.limit, cost });
      }
      return cost;
    });
}
