import {
  Kind,
  valueFromASTUntyped,
  type ArgumentNode,
  type GraphQLField,
  type ValueNode,
} from 'graphql';

import type { ListSize } from './directives';
import { CostQueryError } from './errors';
import type { Variables } from './input-cost';

/** A field's `@listSize` bound to the arguments one selection of it gives. */
export interface Sizing {
  readonly coordinate: string;
  readonly slicing: readonly SlicingArgument[];
  readonly assumedSize: number | undefined;
  readonly requireOne: boolean;
  /** Child fields whose lists take this field's size (the connection pattern), if any. */
  readonly sizedFields: ReadonlySet<string> | undefined;
  /** Whether a slicing argument comes from a variable. */
  readonly variable: boolean;
}

interface SlicingArgument {
  readonly name: string;
  /** The value the selection gives (a literal or a variable); undefined when it gives none. */
  readonly given: ValueNode | undefined;
  /** The argument's default in the schema, when it is a number. */
  readonly defaultValue: number | undefined;
}

/** Binds `listSize` of `field` to the arguments given by one selection of it. */
export function sizingOf(
  coordinate: string,
  field: GraphQLField<unknown, unknown>,
  listSize: ListSize,
  nodes: readonly ArgumentNode[] | undefined,
): Sizing {
  const slicing = listSize.slicingArguments.map((name) => {
    const defaultValue = field.args.find((a) => a.name === name)?.defaultValue;
    return {
      name,
      given: nodes?.find((n) => n.name.value === name)?.value,
      defaultValue: typeof defaultValue === 'number' ? defaultValue : undefined,
    };
  });
  return {
    coordinate,
    slicing,
    assumedSize: listSize.assumedSize,
    requireOne: listSize.requireOneSlicingArgument,
    sizedFields: listSize.sizedFields.length ? new Set(listSize.sizedFields) : undefined,
    variable: slicing.some((s) => s.given?.kind === Kind.VARIABLE),
  };
}

/**
 * The size `sizing` gives its lists: the largest slicing argument given (a value the selection
 * gives, else the argument's default), else `assumedSize`, else undefined (the caller's default).
 * With `requireOneSlicingArgument`, a selection that gives several slicing arguments, or none
 * while none has a default, cannot be priced: CostQueryError. So is a negative slicing value.
 */
export function expectedSize(sizing: Sizing, variables: Variables): number | undefined {
  let given = 0;
  let size: number | undefined;
  for (const argument of sizing.slicing) {
    const value = argument.given && numberOf(argument.given, variables);
    const used = value === undefined ? argument.defaultValue : value;
    if (typeof used === 'number' && used < 0) {
      // priced as 0 it would ask no store, and a resolver that slices with it (`slice(0, -1)`)
      // returns nearly everything
      throw new CostQueryError(
        `${sizing.coordinate}: slicing argument "${argument.name}" must not be negative, got ${used}`,
      );
    }
    if (value === undefined) {
      if (argument.defaultValue !== undefined) size = Math.max(size ?? 0, argument.defaultValue);
    } else if (value !== null) {
      given += 1;
      size = Math.max(size ?? 0, value);
    }
  }
  if (sizing.requireOne && sizing.slicing.length > 0 && (given > 1 || size === undefined)) {
    const names = sizing.slicing.map((s) => s.name).join(', ');
    throw new CostQueryError(
      `${sizing.coordinate}: exactly one slicing argument (${names}) must be given, got ${given}`,
    );
  }
  return size ?? sizing.assumedSize;
}

/** A slicing value: a number, null when given as null, else undefined. */
function numberOf(node: ValueNode, variables: Variables): number | null | undefined {
  // An unset variable leaves the argument unset, so its default applies, as in execution.
  if (node.kind === Kind.VARIABLE && !Object.hasOwn(variables, node.name.value)) return undefined;
  const value: unknown = valueFromASTUntyped(node, variables);
  if (value === null) return null;
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}
