import type { ApolloServerPlugin } from '@apollo/server';
import { ApolloArmor } from '@escape.tech/graphql-armor';
import {
  GraphQLError,
  visit,
  type ParseOptions,
  type SelectionSetNode,
  type ValidationRule,
} from 'graphql';

/**
 * Bounds on what one operation may ask for, checked before anything runs. Without them one
 * request of 2,000 aliases of `challenges` (80 kB in, 463 kB out) took half a second of this
 * process. The team page's operations use 2 to 3 levels, no aliases and under 40 tokens.
 * `__schema` is exempt from depth and cost, which a full introspection query exceeds, and
 * capped instead: one `__schema` or `__type` per operation (15 aliases of `__schema` were 670 B
 * in and 271 kB out, free under the budget). `GRAPHQL_INTROSPECTION=false` turns both off.
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
  /** `__schema` and `__type` fields per operation (fragments included). */
  maxIntrospectionFields: 1,
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
  return {
    parseOptions: { maxTokens: limits.maxTokens },
    validationRules: [...validationRules, introspectionFieldsRule(limits.maxIntrospectionFields)],
    plugins,
  };
}

const INTROSPECTION_FIELDS = new Set(['__schema', '__type']);

/**
 * Refuses an operation that asks for more than `max` introspection fields, counted by response
 * name (an alias is one more answer; the same name twice is merged into one) over the operation
 * and every fragment it spreads.
 */
function introspectionFieldsRule(max: number): ValidationRule {
  return (context) => ({
    OperationDefinition(operation) {
      const names = new Set<string>();
      const count = (selectionSet: SelectionSetNode): void => {
        visit(selectionSet, {
          Field(field) {
            if (INTROSPECTION_FIELDS.has(field.name.value)) {
              names.add(field.alias?.value ?? field.name.value);
            }
          },
        });
      };
      count(operation.selectionSet);
      for (const fragment of context.getRecursivelyReferencedFragments(operation)) {
        count(fragment.selectionSet);
      }
      if (names.size > max) {
        context.reportError(
          new GraphQLError(
            `At most ${max} introspection field${max === 1 ? '' : 's'} (__schema, __type) per operation, got ${names.size}`,
            { nodes: [operation] },
          ),
        );
      }
    },
  });
}
