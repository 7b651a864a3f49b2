import {
  getNamedType,
  isInputObjectType,
  isInterfaceType,
  type GraphQLArgument,
  type GraphQLField,
  type GraphQLInputField,
  type GraphQLNamedType,
  type GraphQLObjectType,
  type GraphQLSchema,
} from 'graphql';

import { costOf, listSizeOf, type ListSize } from './directives';

/**
 * The weights the cost spec gives when no `@cost` says otherwise: an object costs 1 each time it
 * is produced, a scalar or an enum 0, an input object 1 each time it is given.
 */
export const DEFAULT_WEIGHTS = { composite: 1, leaf: 0, inputObject: 1 } as const;

/** The weight of each object of type `type`: its `@cost`, else {@link DEFAULT_WEIGHTS}. */
export function objectWeight(schema: GraphQLSchema, type: GraphQLObjectType): number {
  return costOf(schema, type) ?? DEFAULT_WEIGHTS.composite;
}

/** The weight of each scalar or enum value of type `type`: its `@cost`, else 0. */
export function leafWeight(schema: GraphQLSchema, type: GraphQLNamedType): number {
  return costOf(schema, type) ?? DEFAULT_WEIGHTS.leaf;
}

/**
 * `@cost` on `type.field`, else on the same field of an interface `type` implements (the spec
 * wants it on the object's fields, but a schema written for a looser tool should not lose it).
 */
export function ownFieldWeight(
  schema: GraphQLSchema,
  type: GraphQLObjectType,
  field: GraphQLField<unknown, unknown>,
): number | undefined {
  return costOf(schema, field) ?? fromInterfaces(type, field.name, (f) => costOf(schema, f));
}

/** `@listSize` on `type.field`, else on the same field of an interface `type` implements. */
export function fieldListSize(
  schema: GraphQLSchema,
  type: GraphQLObjectType,
  field: GraphQLField<unknown, unknown>,
): ListSize | undefined {
  return (
    listSizeOf(schema, field) ?? fromInterfaces(type, field.name, (f) => listSizeOf(schema, f))
  );
}

function fromInterfaces<T>(
  type: GraphQLObjectType,
  name: string,
  read: (field: GraphQLField<unknown, unknown>) => T | undefined,
): T | undefined {
  for (const parent of type.getInterfaces()) {
    const field = isInterfaceType(parent) ? parent.getFields()[name] : undefined;
    const found = field && read(field);
    if (found !== undefined) return found;
  }
  return undefined;
}

/**
 * The weight of an argument or input field each time a value is given for it: its `@cost`, else
 * the `@cost` of its scalar or enum type, else 1 for an input object and 0 for a leaf.
 */
export function inputWeight(
  schema: GraphQLSchema,
  input: GraphQLArgument | GraphQLInputField,
): number {
  const type = getNamedType(input.type);
  return (
    costOf(schema, input) ??
    (isInputObjectType(type) ? DEFAULT_WEIGHTS.inputObject : leafWeight(schema, type))
  );
}
