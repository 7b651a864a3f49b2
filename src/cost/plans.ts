import { getVariableValues, type DocumentNode, type GraphQLSchema } from 'graphql';

import { CostQueryError, CostVariablesError } from './errors';
import type { Variables } from './input-cost';
import { compileOperation, type OperationPlan } from './plan';

// Servers parse a repeated query once and hand the same document object back (Apollo Server's
// document store, envelop's parser cache), so a document object is the key of its plans; a
// document, or a schema, that is dropped takes its plans with it.
// A refusal is kept as a plan is: a document too complex to price, sent again, is refused
// again without the work that refused it.
type Compiled = OperationPlan | CostQueryError;
const cache = new WeakMap<GraphQLSchema, WeakMap<DocumentNode, Map<string, Compiled>>>();

/**
 * The plan of an operation of `document`, compiled on first use and then reused; the same
 * CostQueryError when it cannot be priced.
 */
export function planFor(
  schema: GraphQLSchema,
  document: DocumentNode,
  operationName?: string | null,
): OperationPlan {
  let documents = cache.get(schema);
  if (!documents) cache.set(schema, (documents = new WeakMap()));
  let plans = documents.get(document);
  if (!plans) documents.set(document, (plans = new Map()));
  const key = operationName ?? '';
  let plan = plans.get(key);
  if (!plan) {
    try {
      plan = compileOperation(schema, document, operationName);
    } catch (error) {
      if (error instanceof CostQueryError) plans.set(key, error);
      throw error;
    }
    plans.set(key, plan);
  }
  if (plan instanceof CostQueryError) throw plan;
  return plan;
}

const NONE: Variables = Object.freeze(Object.create(null) as Record<string, unknown>);

/**
 * The request's variables as execution sees them: coerced to the operation's variable
 * definitions by graphql's own `getVariableValues` (defaults filled in, `2.5` or `1e308` for an
 * `Int` refused), in an object without a prototype, so that a variable named `constructor` is
 * only ever a variable. Variables that do not coerce throw CostVariablesError with GraphQL's
 * errors: execution refuses them the same way, before any resolver.
 */
export function variablesOf(
  schema: GraphQLSchema,
  plan: OperationPlan,
  given: Variables | null | undefined,
): Variables {
  if (plan.variableDefinitions.length === 0) return NONE;
  const coerced = getVariableValues(schema, plan.variableDefinitions, given ?? {}, {
    maxErrors: 10,
  });
  if (coerced.errors) throw new CostVariablesError(coerced.errors);
  return Object.assign(Object.create(null) as Record<string, unknown>, coerced.coerced);
}
