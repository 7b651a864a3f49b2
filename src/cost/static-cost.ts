import { holds } from './collect';
import type { ArgumentsCost, Variables } from './input-cost';
import { expectedSize } from './list-size';
import type { FieldPlan, TypePlan } from './plan';

/** What one estimate reads besides the plan. */
export interface StaticContext {
  readonly variables: Variables;
  /** The size of a list that neither `@listSize` nor a parent's `sizedFields` bounds. */
  readonly listSize: number;
  /** Costs of the plans that depend on nothing per request; kept by the estimator. */
  readonly constants: WeakMap<TypePlan, number>;
  /** Costs of the other plans for this request, by plan and by the size handed down. */
  readonly memo: Map<TypePlan, Map<number, number>>;
}

/**
 * The estimated cost of the selections `plan` stands for, on one object:
 * the sum of its fields' costs. `handedDown` is the size a parent's `sizedFields` gives.
 */
export function selectionCost(
  plan: TypePlan,
  context: StaticContext,
  handedDown: number | undefined,
): number {
  if (!plan.dynamic) {
    let cost = context.constants.get(plan);
    if (cost === undefined) context.constants.set(plan, (cost = sum(plan, context, undefined)));
    return cost;
  }
  // A plan reached many times (a fragment spread in many places) is costed once per request.
  let bySize = context.memo.get(plan);
  if (!bySize) context.memo.set(plan, (bySize = new Map()));
  const slot = handedDown ?? -1;
  let cost = bySize.get(slot);
  if (cost === undefined) bySize.set(slot, (cost = sum(plan, context, handedDown)));
  return cost;
}

function sum(plan: TypePlan, context: StaticContext, handedDown: number | undefined): number {
  let cost = 0;
  for (const field of plan.fields) {
    if (holds(field.when, context.variables)) cost += fieldCost(field, context, handedDown);
  }
  return cost;
}

/**
 * size × (weight + selections) + arguments, never below 0. The size is 1 for a field that is
 * not a list; for a list, the size a parent hands down to a sized field, else the field's own
 * `@listSize`, else the default, once per level of list. For an interface or a union, the
 * possible type that costs most.
 */
function fieldCost(field: FieldPlan, context: StaticContext, handedDown: number | undefined) {
  const own = field.sizing && expectedSize(field.sizing, context.variables);
  let each = field.weight ?? 0;
  if (field.branches) {
    const inner = field.sizing?.sizedFields ? own : undefined;
    let most = -Infinity;
    for (const branch of field.branches) {
      const cost = (field.weight ?? branch.weight) + selectionCost(branch, context, inner);
      most = Math.max(most, cost);
    }
    each = field.branches.length ? most : each;
  }
  const size = (field.sized ? handedDown : undefined) ?? own ?? context.listSize;
  const count = field.listDepth === 0 ? 1 : size ** field.listDepth;
  return Math.max(0, count * each + argumentsOf(field.args, context.variables));
}

/** The cost of a field's arguments for these variables. */
export function argumentsOf(args: ArgumentsCost, variables: Variables): number {
  return typeof args === 'number' ? args : args(variables);
}
