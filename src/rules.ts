import type { GraphQLFieldConfig, GraphQLNamedType, GraphQLSchema } from 'graphql';
import { getDirective } from '@graphql-tools/utils';

import { ALGORITHMS, isAlgorithm, type RateLimitAlgorithm, type RateLimitRule } from './algorithms';
import { RateLimitConfigError } from './errors';

const MAX_TOKENS_PER_SECOND = 1_000_000;
/** The largest limit whose square is below 2^53: the bucket's exact arithmetic needs it. */
const MAX_BUCKET_LIMIT = 94_906_265;

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

function toRule(args: Record<string, unknown>, coordinate: string, name: string): RateLimitRule {
  const { action, window, limit, algorithm = 'FIXED_WINDOW', cost = 1 } = args;
  const fail = (arg: string, value: unknown, why: string): never => {
    throw new RateLimitConfigError(
      `${coordinate}: @${name}(${arg}: ${JSON.stringify(value)}) ${why}`,
    );
  };
  if (typeof action !== 'string' || action.length === 0)
    fail('action', action, 'must be a non-empty string');
  if (!isPositiveInt(window)) fail('window', window, 'must be a whole number of seconds >= 1');
  if (!isPositiveInt(limit)) fail('limit', limit, 'must be a whole number >= 1');
  if (!isPositiveInt(cost)) fail('cost', cost, 'must be a whole number >= 1');
  if ((cost as number) > (limit as number)) fail('cost', cost, `exceeds limit ${String(limit)}`);
  if (!isAlgorithm(algorithm)) {
    fail('algorithm', algorithm, `must be one of ${ALGORITHMS.join(', ')}`);
  }
  // the server's clock counts whole microseconds: a bucket refills at most a token per tick
  if (
    algorithm === 'TOKEN_BUCKET' &&
    (limit as number) > (window as number) * MAX_TOKENS_PER_SECOND
  ) {
    fail(
      'limit',
      limit,
      `refills over ${MAX_TOKENS_PER_SECOND} tokens per second, the most TOKEN_BUCKET can count`,
    );
  }
  if (algorithm === 'TOKEN_BUCKET' && (limit as number) > MAX_BUCKET_LIMIT) {
    fail('limit', limit, `exceeds ${MAX_BUCKET_LIMIT}, the most TOKEN_BUCKET counts exactly`);
  }
  return {
    action: action as string,
    algorithm: algorithm as RateLimitAlgorithm,
    windowSeconds: window as number,
    limit: limit as number,
    cost: cost as number,
  };
}

function isPositiveInt(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 1;
}
