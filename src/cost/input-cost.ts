import {
  getNamedType,
  isInputObjectType,
  Kind,
  valueFromASTUntyped,
  type ArgumentNode,
  type GraphQLArgument,
  type GraphQLField,
  type GraphQLInputField,
  type GraphQLSchema,
  type ValueNode,
} from 'graphql';

import { inputWeight } from './weights';

/** Variables as the request gave them (JSON), with the operation's defaults filled in. */
export type Variables = Readonly<Record<string, unknown>>;

/** The cost of a field's given arguments: a number, or a function of the variables. */
export type ArgumentsCost = number | ((variables: Variables) => number);

/**
 * The cost of the arguments a field is given in the document: each given value costs its
 * argument's weight and, for an input object, that of each input field given inside it; each item
 * of a list value counts once. An absent or null value costs nothing.
 */
export function argumentsCost(
  schema: GraphQLSchema,
  field: GraphQLField<unknown, unknown>,
  nodes: readonly ArgumentNode[] | undefined,
): ArgumentsCost {
  let fixed = 0;
  const late: Array<(variables: Variables) => number> = [];
  for (const node of nodes ?? []) {
    const input = field.args.find((a) => a.name === node.name.value);
    if (!input) continue;
    if (hasVariables(node.value)) {
      late.push((variables) =>
        valueCost(schema, valueFromASTUntyped(node.value, variables), input),
      );
    } else {
      fixed += valueCost(schema, valueFromASTUntyped(node.value), input);
    }
  }
  if (late.length === 0) return fixed;
  return (variables) => late.reduce((sum, cost) => sum + cost(variables), fixed);
}

/** The cost of `value` (JSON, as a literal or a variable gives it) given for `input`. */
export function valueCost(
  schema: GraphQLSchema,
  value: unknown,
  input: GraphQLArgument | GraphQLInputField,
): number {
  if (value === null || value === undefined) return 0;
  if (Array.isArray(value)) {
    return value.reduce((sum: number, item: unknown) => sum + valueCost(schema, item, input), 0);
  }
  let cost = inputWeight(schema, input);
  const type = getNamedType(input.type);
  if (isInputObjectType(type) && typeof value === 'object') {
    const fields = type.getFields();
    for (const [name, inner] of Object.entries(value)) {
      const field = fields[name];
      if (field) cost += valueCost(schema, inner, field);
    }
  }
  return cost;
}

function hasVariables(node: ValueNode): boolean {
  switch (node.kind) {
    case Kind.VARIABLE:
      return true;
    case Kind.LIST:
      return node.values.some(hasVariables);
    case Kind.OBJECT:
      return node.fields.some((f) => hasVariables(f.value));
    default:
      return false;
  }
}
