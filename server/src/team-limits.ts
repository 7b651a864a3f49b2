import { getDirective } from '@graphql-tools/utils';
import { isObjectType, type GraphQLSchema } from 'graphql';

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
 * Reads the team limits from `schema`'s directives (before `transformer`, which keeps them), so
 * that the SDL stays the one place an action is named. Site-wide and other `by` limits are not
 * the team's: no admin reset of a team names them, and `rateLimits` does not show them.
 */
export function teamLimitsOf(schema: GraphQLSchema, directiveName = 'rateLimit'): TeamLimits {
  const actions = new Set<string>();
  const own = new Set<string>();
  for (const type of Object.values(schema.getTypeMap())) {
    if (!isObjectType(type) || type.name.startsWith('__')) continue;
    const onType = getDirective(schema, type, directiveName) ?? [];
    for (const field of Object.values(type.getFields())) {
      const onField = getDirective(schema, field, directiveName) ?? [];
      for (const args of onField.length > 0 ? onField : onType) {
        if (args.by !== undefined && args.by !== null) continue;
        const action = String(args.action);
        actions.add(action);
        if (type === schema.getQueryType() && field.name === 'rateLimits') own.add(action);
      }
    }
  }
  return { actions: [...actions], shown: [...actions].filter((a) => !own.has(a)) };
}
