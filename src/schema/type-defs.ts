import { ALGORITHMS } from '../rate-limit-rule';
import { costTypeDefs } from '../cost/directives';

/**
 * The SDL of the directive named `name`, of its `RateLimitAlgorithm` enum, and of the cost
 * spec's `@cost` and `@listSize` that price operations for a budget. It is built here, from the
 * validated name and the one list of algorithms, rather than read from `schema/` (which holds
 * the reference server's own SDL), because the name is an option.
 */
export function directiveTypeDefs(name: string): string {
  return `directive @${name}(
  action: String!
  window: Int!
  limit: Int!
  algorithm: RateLimitAlgorithm = ${ALGORITHMS[0]}
  cost: Int = 1
  by: String
  costArg: String
) repeatable on FIELD_DEFINITION | OBJECT

enum RateLimitAlgorithm {
${ALGORITHMS.map((a) => `  ${a}`).join('\n')}
}

${costTypeDefs()}`;
}
