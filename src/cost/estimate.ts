import { OperationTypeNode, type DocumentNode, type GraphQLSchema } from 'graphql';

import { RateLimitConfigError } from '../errors';
import { checkCostDirectives } from './check';
import type { Variables } from './input-cost';
import type { TypePlan } from './plan';
import { planFor, variablesOf } from './plans';
import { selectionCost } from './static-cost';

/** How operations are priced where the schema's `@cost` and `@listSize` say nothing. */
export interface CostOptions {
  /**
   * The size assumed for a list that no `@listSize` bounds (Apollo Router's `list_size`).
   * @default 10
   */
  readonly listSize?: number;
  /**
   * What a mutation costs on top of its fields, once per operation (Apollo Router and Hive
   * charge 10; queries and subscriptions are free).
   * @default 10
   */
  readonly mutationCost?: number;
}

/** The estimated cost of an operation of a document, for the variables of one request. */
export type CostEstimator = (
  document: DocumentNode,
  variables?: Variables | null,
  operationName?: string | null,
) => number;

/** The values {@link CostOptions} take when not given. */
export const COST_DEFAULTS = { listSize: 10, mutationCost: 10 } as const;

/** {@link CostOptions} with the defaults filled in; a bad value is a RateLimitConfigError. */
export function resolveCostOptions(options: CostOptions = {}): Required<CostOptions> {
  const resolved = {
    listSize: options.listSize ?? COST_DEFAULTS.listSize,
    mutationCost: options.mutationCost ?? COST_DEFAULTS.mutationCost,
  };
  for (const [name, value] of Object.entries(resolved)) {
    if (!Number.isSafeInteger(value) || value < 0) {
      throw new RateLimitConfigError(`cost option ${name} must be an integer >= 0, got ${value}`);
    }
  }
  return resolved;
}

/**
 * An estimator of operation costs on `schema`, by the cost spec: an object costs 1 and a scalar
 * or an enum 0 unless `@cost` says otherwise, a list multiplies its items by its size (slicing
 * arguments, `assumedSize`, else `listSize`), arguments add their weights, an interface or a
 * union costs its most expensive possible type, and a mutation adds `mutationCost`. Each
 * document object is compiled once; the parts that do not depend on variables are then costed
 * once, so pricing a repeated operation reads only its variable parts.
 * Variables are coerced as execution coerces them (graphql's `getVariableValues`).
 * An estimate that is not a safe integer (lists whose sizes multiply past 2^53, or 0 × Infinity)
 * is `Infinity`, above any ceiling.
 * Throws RateLimitConfigError at once for bad options or cost directives (see
 * {@link checkCostDirectives}); the estimator throws CostQueryError (`COST_QUERY_PARSE_FAILURE`)
 * for an operation that cannot be priced (also one nested deeper than MAX_DEPTH or too complex
 * to price within the steps its document's size pays for, at most MAX_WORK: see `bounds`), and
 * CostVariablesError (GraphQL's own coercion errors) for variables that do not coerce.
 */
export function createCostEstimator(schema: GraphQLSchema, options?: CostOptions): CostEstimator {
  const { listSize, mutationCost } = resolveCostOptions(options);
  checkCostDirectives(schema);
  const constants = new WeakMap<TypePlan, number>();
  return (document, variables, operationName) => {
    const plan = planFor(schema, document, operationName);
    const base = plan.operation === OperationTypeNode.MUTATION ? mutationCost : 0;
    // coerced even when the cost does not depend on them: an operation whose variables do not
    // coerce runs nothing, so it is not priced (CostVariablesError)
    const coerced = variablesOf(schema, plan, variables);
    const context = { variables: coerced, listSize, constants, memo: new Map() };
    const cost = base + selectionCost(plan.root, context, undefined);
    // sizes multiply: 35 levels of `first: 2147483647` pass 2^53, and 0 × Infinity is NaN
    return Number.isSafeInteger(cost) ? cost : Infinity;
  };
}

/** One request to price, for {@link estimateCost}. */
export interface EstimateOptions extends CostOptions {
  readonly operationName?: string | null;
  readonly variables?: Variables | null;
}

const estimators = new WeakMap<GraphQLSchema, Map<string, CostEstimator>>();

/**
 * The estimated cost of one operation: {@link createCostEstimator} for `schema` and these
 * options (kept per schema, so that repeated calls share the compiled plans), applied once.
 */
export function estimateCost(
  schema: GraphQLSchema,
  document: DocumentNode,
  options: EstimateOptions = {},
): number {
  const { listSize, mutationCost } = resolveCostOptions(options);
  let bySchema = estimators.get(schema);
  if (!bySchema) estimators.set(schema, (bySchema = new Map()));
  const key = `${listSize}/${mutationCost}`;
  let estimate = bySchema.get(key);
  if (!estimate) bySchema.set(key, (estimate = createCostEstimator(schema, options)));
  return estimate(document, options.variables, options.operationName);
}
