import {
  isAbstractType,
  Kind,
  type DirectiveNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLObjectType,
  type GraphQLSchema,
  type SelectionSetNode,
} from 'graphql';

import { CostQueryError } from './errors';
import type { Variables } from './input-cost';

/** A `@skip` or `@include` whose `if` is a variable: the selection is kept when it holds. */
export interface Condition {
  readonly variable: string;
  /** True for `@include(if: $v)`, false for `@skip(if: $v)`. */
  readonly include: boolean;
}

/** Conditions that must all hold (the selection's own and those of the fragments around it). */
export type Conjunction = readonly Condition[];

/** A selection set to collect from, and the conditions under which it is reached. */
export interface Member {
  readonly selectionSet: SelectionSetNode;
  readonly when: Conjunction;
}

/** The selections of one response key: the field runs once when any of them is kept. */
export interface FieldGroup {
  readonly name: string;
  readonly nodes: ReadonlyArray<{ readonly node: FieldNode; readonly when: Conjunction }>;
}

/**
 * The fields an object of `type` gets from `members`, grouped by response key as execution
 * merges them: fragments whose type condition `type` does not meet are left out, `@skip` and
 * `@include` with a literal `if` are decided now, those with a variable are kept as conditions.
 */
export function collectFields(
  schema: GraphQLSchema,
  fragments: ReadonlyMap<string, FragmentDefinitionNode>,
  type: GraphQLObjectType,
  members: readonly Member[],
): Map<string, FieldGroup> {
  const groups = new Map<string, { name: string; nodes: FieldGroup['nodes'][number][] }>();
  const visit = (set: SelectionSetNode, outer: Conjunction, path: ReadonlySet<string>): void => {
    for (const selection of set.selections) {
      const own = conditionsOf(selection.directives);
      if (own === false) continue;
      const when = own.length ? [...outer, ...own] : outer;
      if (selection.kind === Kind.FIELD) {
        const key = selection.alias?.value ?? selection.name.value;
        let group = groups.get(key);
        if (!group) groups.set(key, (group = { name: selection.name.value, nodes: [] }));
        group.nodes.push({ node: selection, when });
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        if (applies(schema, selection.typeCondition?.name.value, type)) {
          visit(selection.selectionSet, when, path);
        }
      } else {
        const name = selection.name.value;
        // Validation forbids fragment cycles; an unvalidated document must not loop here.
        if (path.has(name)) throw new CostQueryError(`Fragment "${name}" spreads itself`);
        const fragment = fragments.get(name);
        if (fragment && applies(schema, fragment.typeCondition.name.value, type)) {
          visit(fragment.selectionSet, when, new Set(path).add(name));
        }
      }
    }
  };
  for (const member of members) visit(member.selectionSet, member.when, new Set());
  return groups;
}

/** Whether one of `when` (a disjunction; undefined for always) holds for `variables`. */
export function holds(when: readonly Conjunction[] | undefined, variables: Variables): boolean {
  return (
    when === undefined ||
    when.some((all) => all.every((c) => (variables[c.variable] === true) === c.include))
  );
}

/** A stable text for a conjunction, so that equal conditions share a compiled plan. */
export function conjunctionKey(when: Conjunction): string {
  return [...new Set(when.map((c) => `${c.include ? '' : '!'}$${c.variable}`))].sort().join('&');
}

function conditionsOf(directives: readonly DirectiveNode[] | undefined): Conjunction | false {
  const found: Condition[] = [];
  for (const directive of directives ?? []) {
    const name = directive.name.value;
    if (name !== 'skip' && name !== 'include') continue;
    const value = directive.arguments?.find((a) => a.name.value === 'if')?.value;
    const include = name === 'include';
    if (value?.kind === Kind.BOOLEAN) {
      if (value.value !== include) return false;
    } else if (value?.kind === Kind.VARIABLE) {
      found.push({ variable: value.name.value, include });
    }
  }
  return found;
}

function applies(schema: GraphQLSchema, condition: string | undefined, type: GraphQLObjectType) {
  if (condition === undefined || condition === type.name) return true;
  const target = schema.getType(condition);
  return target !== undefined && isAbstractType(target) && schema.isSubType(target, type);
}
