import type {
  GraphQLArgument,
  GraphQLEnumValue,
  GraphQLField,
  GraphQLInputField,
  GraphQLNamedType,
  GraphQLSchema,
} from 'graphql';
import { getDirective } from '@graphql-tools/utils';

/**
 * What may carry a cost directive, spelled with graphql's own types so that the published
 * declarations need no @graphql-tools/utils types.
 */
export type CostElement =
  | GraphQLNamedType
  | GraphQLField<unknown, unknown>
  | GraphQLArgument
  | GraphQLInputField
  | GraphQLEnumValue;

/** The cost spec's directive that weighs a field, a type, an argument or an input field. */
export const COST_DIRECTIVE = 'cost';
/** The cost spec's directive that tells how long a field's list is. */
export const LIST_SIZE_DIRECTIVE = 'listSize';

/**
 * The SDL of `@cost` and `@listSize`, with the names, arguments and locations of Apollo Router's
 * demand control (the IBM GraphQL Cost Directives with an `Int` weight), so that a schema priced
 * for the Router is priced the same here.
 */
export function costTypeDefs(): string {
  return `directive @${COST_DIRECTIVE}(weight: Int!) on
  | ARGUMENT_DEFINITION
  | ENUM
  | FIELD_DEFINITION
  | INPUT_FIELD_DEFINITION
  | OBJECT
  | SCALAR

directive @${LIST_SIZE_DIRECTIVE}(
  assumedSize: Int
  slicingArguments: [String!]
  sizedFields: [String!]
  requireOneSlicingArgument: Boolean = true
) on FIELD_DEFINITION
`;
}

/** The arguments of one `@listSize`, with the spec's defaults applied. */
export interface ListSize {
  readonly assumedSize: number | undefined;
  readonly slicingArguments: readonly string[];
  readonly sizedFields: readonly string[];
  /** @default true */
  readonly requireOneSlicingArgument: boolean;
}

// Schema elements are immutable and belong to one schema, so what their directives say is read
// once per element: getDirective coerces the directive's arguments from the AST on every call.
const weights = new WeakMap<object, number | null>();
const listSizes = new WeakMap<object, ListSize | null>();

function first(
  schema: GraphQLSchema,
  element: CostElement,
  name: string,
): Record<string, unknown> | undefined {
  return getDirective(schema, element, name)?.[0];
}

/** The `weight` `@cost` on `element` gives, as written (undefined when it carries no `@cost`). */
export function rawCostOf(schema: GraphQLSchema, element: CostElement): unknown {
  const args = first(schema, element, COST_DIRECTIVE);
  return args ? (args.weight ?? null) : undefined;
}

/** The `weight` of `@cost` on `element`, or undefined when it carries none. */
export function costOf(schema: GraphQLSchema, element: CostElement): number | undefined {
  let weight = weights.get(element);
  if (weight === undefined) {
    const value = rawCostOf(schema, element);
    weight = typeof value === 'number' && Number.isSafeInteger(value) ? value : null;
    weights.set(element, weight);
  }
  return weight ?? undefined;
}

/** The `@listSize` of a field, or undefined when it carries none. */
export function listSizeOf(schema: GraphQLSchema, field: CostElement): ListSize | undefined {
  let found = listSizes.get(field);
  if (found === undefined) {
    const args = first(schema, field, LIST_SIZE_DIRECTIVE);
    found = args
      ? {
          assumedSize: typeof args.assumedSize === 'number' ? args.assumedSize : undefined,
          slicingArguments: strings(args.slicingArguments),
          sizedFields: strings(args.sizedFields),
          // Code-first schemas carry raw extension values: the SDL default is applied here.
          requireOneSlicingArgument: args.requireOneSlicingArgument !== false,
        }
      : null;
    listSizes.set(field, found);
  }
  return found ?? undefined;
}

function strings(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}
