import {
  getNullableType,
  isInputObjectType,
  isListType,
  Kind,
  valueFromASTUntyped,
  type ArgumentNode,
  type GraphQLArgument,
  type GraphQLField,
  type GraphQLInputField,
  type GraphQLInputType,
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

/**
 * The cost of `value` (as a literal or a coerced variable gives it) given for `input`, walked
 * along the input's type: a list value counts each item once per level of list the type has,
 * an input object adds the fields given inside it. A value a custom scalar takes (a JSON array,
 * however deep) is one value, so no variable can take this walk deeper than the schema's types.
 */
export function valueCost(
  schema: GraphQLSchema,
  value: unknown,
  input: GraphQLArgument | GraphQLInputField,
  type: GraphQLInputType = input.type,
): number {
  if (value === null || value === undefined) return 0;
  const nullable = getNullableType(type);
  if (isListType(nullable)) {
    if (!Array.isArray(value)) return valueCost(schema, value, input, nullable.ofType);
    let cost = 0;
    for (const item of value) cost += valueCost(schema, item, input, nullable.ofType);
    return cost;
  }
  let cost = inputWeight(schema, input);
  if (isInputObjectType(nullable) && typeof value === 'object') {
    const fields = nullable.getFields();
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
