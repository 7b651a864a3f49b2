import { OperationTypeNode, type DocumentNode, type GraphQLSchema } from 'graphql';

import { COST_DEFAULTS, resolveCostOptions, type CostOptions } from './estimate';
import type { Variables } from './input-cost';
import type { FieldPlan, TypePlan } from './plan';
import { planFor, variablesOf } from './plans';
import { argumentsOf } from './static-cost';

/** The request whose result is priced, for {@link actualCost}. */
export interface ActualCostOptions extends Pick<CostOptions, 'mutationCost'> {
  readonly operationName?: string | null;
  readonly variables?: Variables | null;
}

type Data = Readonly<Record<string, unknown>>;

interface Walk {
  readonly variables: Variables;
  /**
   * Selections already costed on an object, for objects whose type the data does not name
   * among several possible types; made at the first such object.
   */
  seen: WeakMap<object, Map<TypePlan, number>> | undefined;
}

/**
 * What an operation cost once executed: the estimate's formula over the data it returned, with
 * the real length of each list. Each place a field's value takes costs its weight: a field that
 * is not a list has one (a null there costs the weight and nothing below), a list one per item
 * (a null list has none). Fields absent from `data` (skipped, or under a null) cost nothing.
 * An object whose `__typename` is not in the data costs as the most expensive of its possible
 * types, each counted over the keys the object has (an upper bound; asking for `__typename`
 * makes it exact). So does one whose `__typename` key a selection gave to another field (an
 * alias, `__typename: title`): a response key a client can write never lowers the cost. A
 * mutation adds `mutationCost`, as in the estimate.
 */
export function actualCost(
  schema: GraphQLSchema,
  document: DocumentNode,
  data: unknown,
  options: ActualCostOptions = {},
): number {
  // a budget prices every result: the default needs no checking
  const mutationCost =
    options.mutationCost === undefined
      ? COST_DEFAULTS.mutationCost
      : resolveCostOptions(options).mutationCost;
  const plan = planFor(schema, document, options.operationName);
  const base = plan.operation === OperationTypeNode.MUTATION ? mutationCost : 0;
  if (!isObject(data)) return base;
  const walk = { variables: variablesOf(schema, plan, options.variables), seen: undefined };
  return base + selectionCost(plan.root, data, walk);
}

function selectionCost(plan: TypePlan, data: Data, walk: Walk): number {
  let cost = 0;
  for (const field of plan.fields) {
    if (Object.hasOwn(data, field.key)) cost += fieldCost(field, data[field.key], walk);
  }
  return cost;
}

function fieldCost(field: FieldPlan, value: unknown, walk: Walk): number {
  return Math.max(
    0,
    placesCost(field, value, field.listDepth, walk) + argumentsOf(field.args, walk.variables),
  );
}

function placesCost(field: FieldPlan, value: unknown, depth: number, walk: Walk): number {
  if (depth === 0) return placeCost(field, value, walk);
  if (!Array.isArray(value)) return 0;
  let cost = 0;
  for (const item of value) cost += placesCost(field, item, depth - 1, walk);
  return cost;
}

function placeCost(field: FieldPlan, value: unknown, walk: Walk): number {
  const { branches, weight } = field;
  if (!branches?.length) return weight ?? 0;
  if (!isObject(value)) return weight ?? Math.max(...branches.map((b) => b.weight));
  // one possible type (an object type), or the one the data names, when nothing else can
  const only = branches.length === 1 ? branches[0] : undefined;
  const named =
    only === undefined && typeof value.__typename === 'string' && namesItsType(branches)
      ? value.__typename
      : undefined;
  const exact =
    only ?? (named === undefined ? undefined : branches.find((b) => b.typeName === named));
  if (exact) return (weight ?? exact.weight) + selectionCost(exact, value, walk);
  let most = -Infinity;
  for (const branch of branches) {
    most = Math.max(most, (weight ?? branch.weight) + remembered(branch, value, walk));
  }
  return most;
}

// Without `__typename` every possible type is tried on the same object, and again on each object
// below it: remembering what each plan cost on each object keeps that linear in the data.
function remembered(plan: TypePlan, data: Data, walk: Walk): number {
  const seen = (walk.seen ??= new WeakMap());
  let byPlan = seen.get(data);
  if (!byPlan) seen.set(data, (byPlan = new Map()));
  let cost = byPlan.get(plan);
  if (cost === undefined) byPlan.set(plan, (cost = selectionCost(plan, data, walk)));
  return cost;
}

// Whether the key `__typename` of an object with these possible types can only hold its type's
// name: no type has another field under that key (a client may alias one, `__typename: title`,
// in the selections of one type; validation keeps one field per key within a type). Kept per
// list of branches, which plans share.
const typenameKept = new WeakMap<readonly TypePlan[], boolean>();
function namesItsType(branches: readonly TypePlan[]): boolean {
  let kept = typenameKept.get(branches);
  if (kept === undefined) {
    // the real `__typename` has no plan (the server answers it): any plan under the key is not it
    kept = !branches.some((b) => b.fields.some((f) => f.key === '__typename'));
    typenameKept.set(branches, kept);
  }
  return kept;
}

function isObject(value: unknown): value is Data {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
