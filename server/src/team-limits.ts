import type { RateLimitRule } from 'graphql-atomic-rate-limit';

/** The limits a team's own requests count against, as the schema's `@rateLimit`s declare them. */
export interface TeamLimits {
  /** Every action counted per team (a `@rateLimit` without `by`): what an admin may reset. */
  readonly actions: readonly string[];
  /**
   * What `Query.rateLimits` reports: every team action but the ones that limit `rateLimits`
   * itself, whose count would change with the very call that reports it.
   */
  readonly shown: readonly string[];
}

/**
 * The team limits among the rules `transformer` saw (the directive's `rules()`, by field), so
 * that the SDL stays the one place an action is named. Site-wide and other `by` limits are not
 * the team's: no admin reset of a team names them, and `rateLimits` does not show them.
 */
export function teamLimitsOf(rules: ReadonlyMap<string, readonly RateLimitRule[]>): TeamLimits {
  const actions = new Set<string>();
  const own = new Set<string>();
  for (const [field, fieldRules] of rules) {
    for (const rule of fieldRules) {
      if (rule.by !== undefined) continue;
      actions.add(rule.action);
      if (field === 'Query.rateLimits') own.add(rule.action);
    }
  }
  return { actions: [...actions], shown: [...actions].filter((a) => !own.has(a)) };
}
