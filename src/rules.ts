import type { GraphQLFieldConfig, GraphQLNamedType, GraphQLSchema } from 'graphql';
import { getDirective } from '@graphql-tools/utils';

import { ruleProblem, type RateLimitRule } from './algorithms';
import { RateLimitConfigError } from './errors';

/**
 * The rules that apply to `typeName.fieldName`: the field's own `@rateLimit` directives, or,
 * when it has none, those on its object type. Throws a RateLimitConfigError naming the field
 * and the argument for any invalid value, so a bad directive fails at schema build.
 */
export function rulesFor(
  schema: GraphQLSchema,
  typeName: string,
  fieldName: string,
  field: GraphQLFieldConfig<unknown, unknown>,
  directiveName: string,
): RateLimitRule[] {
  const coordinate = `${typeName}.${fieldName}`;
  let args = directivesOn(schema, field, directiveName, coordinate);
  if (args.length === 0) {
    const type: GraphQLNamedType | undefined = schema.getType(typeName);
    if (type) args = directivesOn(schema, type, directiveName, coordinate);
  }
  const rules = args.map((a) => toRule(a, coordinate, directiveName));
  const seen = new Set<string>();
  for (const r of rules) {
    const id = `${r.algorithm}/${r.windowSeconds}/${r.action}`;
    if (seen.has(id)) {
      throw new RateLimitConfigError(
        `${coordinate}: two @${directiveName} share action "${r.action}", algorithm ${r.algorithm} ` +
          `and window ${r.windowSeconds}; they would count one counter twice, keep one`,
      );
    }
    seen.add(id);
  }
  return rules;
}

/** The arguments of each `@name` on `node`; values SDL validation let through are named here. */
function directivesOn(
  schema: GraphQLSchema,
  node: Parameters<typeof getDirective>[1],
  name: string,
  coordinate: string,
): Record<string, unknown>[] {
  try {
    return getDirective(schema, node, name) ?? [];
  } catch (error) {
    throw new RateLimitConfigError(`${coordinate}: @${name}: ${(error as Error).message}`);
  }
}

/** What an RFC 8941 string cannot carry: anything but printable ASCII. `action` goes in headers. */
const NOT_HEADER_SAFE = /[^\x20-\x7e]/u;

function toRule(args: Record<string, unknown>, coordinate: string, name: string): RateLimitRule {
  const { action, window, limit, algorithm = 'FIXED_WINDOW', cost = 1 } = args;
  const rule = { action, algorithm, windowSeconds: window, limit, cost };
  const problem = ruleProblem(rule);
  if (problem) {
    const argument = problem.field === 'windowSeconds' ? 'window' : problem.field;
    throw new RateLimitConfigError(
      `${coordinate}: @${name}(${argument}: ${JSON.stringify(problem.value)}) ${problem.why}`,
    );
  }
  const unsafe = NOT_HEADER_SAFE.exec(action as string)?.[0];
  if (unsafe !== undefined) {
    const codePoint = `U+${(unsafe.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`;
    throw new RateLimitConfigError(
      `${coordinate}: @${name}(action: ${JSON.stringify(action)}) must be printable ASCII ` +
        `(space to ~) but holds ${codePoint}: the RateLimit headers carry it as a string`,
    );
  }
  return rule as RateLimitRule;
}
