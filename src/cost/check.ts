import {
  getNamedType,
  getNullableType,
  isEnumType,
  isInputObjectType,
  isInterfaceType,
  isListType,
  isNamedType,
  isObjectType,
  isScalarType,
  type GraphQLField,
  type GraphQLSchema,
} from 'graphql';

import { RateLimitConfigError } from '../errors';
import {
  COST_DIRECTIVE,
  LIST_SIZE_DIRECTIVE,
  listSizeOf,
  rawCostOf,
  type CostElement,
} from './directives';

/**
 * Checks the cost directives of `schema` as the cost spec's validation asks: each `@cost` weight
 * is an integer (a code-first schema could give `"2.0"`); in each `@listSize`, each slicing
 * argument is an `Int` argument of the field, each sized field a list field of the type the
 * field returns, and a field that returns no list names sized fields. Throws a
 * RateLimitConfigError naming `Type.field` for the first that is not, at schema build rather
 * than on the first request that would stumble on it.
 */
export function checkCostDirectives(schema: GraphQLSchema): void {
  for (const type of Object.values(schema.getTypeMap())) {
    if (type.name.startsWith('__')) continue;
    if (isObjectType(type) || isScalarType(type) || isEnumType(type)) {
      checkWeight(schema, type.name, type);
    }
    if (isObjectType(type) || isInterfaceType(type)) {
      for (const field of Object.values(type.getFields())) {
        const coordinate = `${type.name}.${field.name}`;
        checkWeight(schema, coordinate, field);
        for (const arg of field.args) checkWeight(schema, `${coordinate}(${arg.name}:)`, arg);
        checkListSize(schema, coordinate, field);
      }
    } else if (isInputObjectType(type)) {
      for (const field of Object.values(type.getFields())) {
        checkWeight(schema, `${type.name}.${field.name}`, field);
      }
    }
  }
}

function checkWeight(schema: GraphQLSchema, coordinate: string, element: CostElement) {
  const weight = rawCostOf(schema, element);
  if (weight !== undefined && !Number.isSafeInteger(weight)) {
    throw new RateLimitConfigError(
      `${coordinate}: @${COST_DIRECTIVE}(weight: ${JSON.stringify(weight)}) must be an integer`,
    );
  }
}

function checkListSize(
  schema: GraphQLSchema,
  coordinate: string,
  field: GraphQLField<unknown, unknown>,
): void {
  const listSize = listSizeOf(schema, field);
  if (!listSize) return;
  const fail = (why: string): never => {
    throw new RateLimitConfigError(`${coordinate}: @${LIST_SIZE_DIRECTIVE} ${why}`);
  };
  const { assumedSize, slicingArguments, sizedFields } = listSize;
  if (assumedSize !== undefined && (!Number.isSafeInteger(assumedSize) || assumedSize < 0)) {
    fail(`assumedSize must be an integer >= 0, got ${assumedSize}`);
  }
  for (const name of slicingArguments) {
    const argument = field.args.find((a) => a.name === name);
    const type = argument && getNullableType(argument.type);
    if (!type || !isNamedType(type) || type.name !== 'Int') {
      fail(
        `slicingArguments names "${name}", which is not an Int argument of the field` +
          (argument ? ` (it is ${String(argument.type)})` : ''),
      );
    }
  }
  const returned = getNamedType(field.type);
  for (const name of sizedFields) {
    const sized =
      isObjectType(returned) || isInterfaceType(returned) ? returned.getFields()[name] : undefined;
    if (!sized || !isListType(getNullableType(sized.type))) {
      fail(`sizedFields names "${name}", which is not a list field of ${returned.name}`);
    }
  }
  if (sizedFields.length === 0 && !isListType(getNullableType(field.type))) {
    fail(`is on a field that returns no list (${String(field.type)}) and names no sizedFields`);
  }
}

/**
 * Whether any element of `schema` carries `@cost` or `@listSize`. A budget on a schema that
 * carries none prices every field at 1 and every list at the default size: behind a federated
 * gateway, the sign that composition dropped them (see `warnIfUnpriced`).
 */
export function carriesCostDirectives(schema: GraphQLSchema): boolean {
  const weighed = (element: CostElement) => rawCostOf(schema, element) !== undefined;
  return Object.values(schema.getTypeMap()).some((type) => {
    if (type.name.startsWith('__')) return false;
    if (weighed(type)) return true;
    if (isObjectType(type) || isInterfaceType(type)) {
      return Object.values(type.getFields()).some(
        (field) =>
          weighed(field) || listSizeOf(schema, field) !== undefined || field.args.some(weighed),
      );
    }
    if (isInputObjectType(type)) return Object.values(type.getFields()).some(weighed);
    if (isEnumType(type)) return type.getValues().some(weighed);
    return false;
  });
}
