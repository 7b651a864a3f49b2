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

import { checkDepth, type Work } from './bounds';
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

/** A selection set to collect from, the conditions under which it is reached, and how deep. */
export interface Member {
  readonly selectionSet: SelectionSetNode;
  readonly when: Conjunction;
  /** Selection sets around this one (the operation's own is at 0). */
  readonly depth: number;
}

/** One selection of a field: kept under `when`, its selection set at `depth + 1`. */
export interface Collected {
  readonly node: FieldNode;
  readonly when: Conjunction;
  readonly depth: number;
}

/** The selections of one response key: the field runs once when any of them is kept. */
export interface FieldGroup {
  readonly name: string;
  readonly nodes: readonly Collected[];
}

/** What collecting fields reads besides the selections: the schema, the document, a bound. */
export interface Collecting {
  readonly schema: GraphQLSchema;
  readonly fragments: ReadonlyMap<string, FragmentDefinitionNode>;
  readonly work: Work;
}

/**
 * The fields an object of `type` gets from `members`, grouped by response key as execution
 * merges them: fragments whose type condition `type` does not meet are left out, `@skip` and
 * `@include` with a literal `if` are decided now, those with a variable are kept as conditions.
 * Like graphql-js, each fragment is collected once per selection set, here once per set of
 * conditions it is spread under (a second spread under the same conditions adds nothing), so a
 * fragment spread twice at each of n levels costs n steps, not 2^n. Each selection met is a
 * step of `work`, and nesting past MAX_DEPTH is refused.
 */
export function collectFields(
  { schema, fragments, work }: Collecting,
  type: GraphQLObjectType,
  members: readonly Member[],
): Map<string, FieldGroup> {
  const groups = new Map<string, { name: string; nodes: Collected[] }>();
  const collected = new Set<string>();
  // Each conjunction met gets a number, from the number of the one around it and its own
  // conditions, so telling a fragment's second collection under the same conditions costs one
  // lookup, not a pass over conditions as long as the nesting (in the order they were met: the
  // same conditions met in another order are collected twice, within the bound on work).
  const conjunctions = new Map<string, number>();
  const visit = (
    set: SelectionSetNode,
    outer: Conjunction,
    outerId: number,
    path: ReadonlySet<string>,
    depth: number,
  ): void => {
    work.spend(set.selections.length);
    for (const selection of set.selections) {
      if (selection.directives?.length) work.spend(selection.directives.length);
      const own = conditionsOf(selection.directives);
      if (own === false) continue;
      let when = outer;
      let whenId = outerId;
      if (own.length) {
        work.spend(outer.length);
        when = [...outer, ...own];
        const text = `${outerId}${own.map((c) => `${c.include ? '+' : '-'}${c.variable}`).join('')}`;
        whenId = conjunctions.get(text) ?? conjunctions.set(text, conjunctions.size + 1).size;
      }
      if (selection.kind === Kind.FIELD) {
        const key = selection.alias?.value ?? selection.name.value;
        let group = groups.get(key);
        if (!group) groups.set(key, (group = { name: selection.name.value, nodes: [] }));
        group.nodes.push({ node: selection, when, depth });
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        if (applies(schema, selection.typeCondition?.name.value, type)) {
          checkDepth(depth + 1);
          visit(selection.selectionSet, when, whenId, path, depth + 1);
        }
      } else {
        const name = selection.name.value;
        // Validation forbids fragment cycles; an unvalidated document must not loop here.
        if (path.has(name)) throw new CostQueryError(`Fragment "${name}" spreads itself`);
        const fragment = fragments.get(name);
        if (!fragment || !applies(schema, fragment.typeCondition.name.value, type)) continue;
        const once = `${name}?${whenId}`;
        if (collected.has(once)) continue;
        collected.add(once);
        checkDepth(depth + 1);
        visit(fragment.selectionSet, when, whenId, new Set(path).add(name), depth + 1);
      }
    }
  };
  members.forEach((member, i) => {
    // the conditions a member comes with number apart from those met here
    visit(
      member.selectionSet,
      member.when,
      member.when.length ? -1 - i : 0,
      new Set(),
      member.depth,
    );
  });
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
