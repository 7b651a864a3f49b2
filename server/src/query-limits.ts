import type { ApolloServerPlugin } from '@apollo/server';
import { ApolloArmor } from '@escape.tech/graphql-armor';
import type { ParseOptions, ValidationRule } from 'graphql';

/**
 * Bounds on what one operation may ask for, checked before anything runs. Without them one
 * request of 2,000 aliases of `challenges` (80 kB in, 463 kB out) took half a second of this
 * process. The team page's operations use 2 to 3 levels, no aliases and under 40 tokens;
 * introspection is exempt from depth and cost.
 */
export const QUERY_LIMITS = {
  /** Lexical tokens in the document; checked while parsing, so a huge document stops early. */
  maxTokens: 1_000,
  /** Aliased fields per operation (fragments included). */
  maxAliases: 15,
  /** Nesting of selections. */
  maxDepth: 8,
  /** graphql-armor's estimate: objects 2, scalars 1, times 1.5 per level. */
  maxCost: 5_000,
  /** Directives used in the operation. */
  maxDirectives: 50,
} as const;

/** What Apollo Server needs to enforce {@link QUERY_LIMITS}. */
export interface QueryLimits {
  readonly parseOptions: ParseOptions;
  readonly validationRules: ValidationRule[];
  readonly plugins: ApolloServerPlugin[];
}

/**
 * graphql-armor's validation rules for aliases, depth, cost and directives (refused with
 * GRAPHQL_VALIDATION_FAILED) and graphql-js's own token limit at parse time (refused with
 * GRAPHQL_PARSE_FAILED); both answer HTTP 400. Armor also masks "Did you mean" suggestions.
 */
export function queryLimits(limits = QUERY_LIMITS): QueryLimits {
  const { plugins, validationRules } = new ApolloArmor({
    // graphql-js's parser stops at the limit itself; armor's version parses the document twice.
    maxTokens: { enabled: false },
    maxAliases: { n: limits.maxAliases },
    maxDepth: { n: limits.maxDepth },
    costLimit: { maxCost: limits.maxCost },
    maxDirectives: { n: limits.maxDirectives },
  }).protect();
  return { parseOptions: { maxTokens: limits.maxTokens }, validationRules, plugins };
}
