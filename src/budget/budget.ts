import {
  getOperationAST,
  GraphQLError,
  OperationTypeNode,
  type DocumentNode,
  type GraphQLResolveInfo,
  type GraphQLSchema,
} from 'graphql';

import { actualCost } from '../cost/actual';
import { carriesCostDirectives } from '../cost/check';
import { createCostEstimator, type CostEstimator } from '../cost/estimate';
import type { Variables } from '../cost/input-cost';
import { reviseDecision, storeFailure, type DecisionEvent, type Reporter } from '../decisions';
import type { Decider } from '../decide';
import {
  asError,
  CostEstimatedTooExpensiveError,
  RateLimitedError,
  RateLimitUnavailableError,
} from '../errors';
import { identityFrom } from '../identity';
import type { Config } from '../options';
import { costExtension, type CostExtension } from './extension';
import type { BudgetConfig } from './options';
import { budgetStore, type Taken } from './take';

/** One operation about to run, as a server plugin sees it. */
export interface BudgetRequest {
  readonly schema: GraphQLSchema;
  readonly document: DocumentNode;
  readonly variables?: Variables | null | undefined;
  readonly operationName?: string | null | undefined;
  readonly context: unknown;
}

/** What the budget decided for one operation before it ran. */
export interface Charge {
  readonly request: BudgetRequest;
  /** The estimated cost; undefined when the operation could not be priced. */
  readonly estimate: number | undefined;
  /** Why the operation must not run (no resolver may); undefined when it may. */
  readonly refusal?: GraphQLError | undefined;
  /** What was taken, when it can be given back. */
  readonly taken?: Taken | undefined;
  /** The take as it was reported, when a store decided it. */
  readonly event?: DecisionEvent | undefined;
}

/** An operation cost budget, for the server plugins to apply around execution. */
export interface Budget {
  /**
   * Prices the operation and takes its estimate from its caller's budget; undefined for an
   * operation the budget does not charge (a subscription, or none the document names).
   */
  admit(request: BudgetRequest): Promise<Charge | undefined>;
  /**
   * Once the operation ran (`data` is its result's), or was refused: gives back what it did not
   * use, and answers its `extensions.cost` (undefined when it could not be priced).
   */
  settle(charge: Charge, data: unknown): Promise<CostExtension | undefined>;
  /**
   * At start, for each schema served (once per schema): warns when it carries no `@cost` and no
   * `@listSize` at all, the sign that a gateway's composition dropped them.
   */
  checkSchema(schema: GraphQLSchema): void;
}

/** The `code` of the warning {@link Budget.checkSchema} emits. */
export const UNPRICED_SCHEMA_WARNING = 'GRAPHQL_RATE_LIMIT_UNPRICED_SCHEMA';

/**
 * The budget of `config.budget`. Each operation takes its estimate in one store call (none for
 * an estimate of 0); one that does not fit, or costs more than any wait could let through, is
 * refused before anything runs, and takes nothing. After it ran, the points its result did not
 * use (estimate less actual cost) go back to the very window, log or bucket they came from.
 */
export function createBudget(
  config: Config,
  budget: BudgetConfig,
  report: Reporter,
  decider: Decider,
): Budget {
  const { rule, ceiling, maxCost, listSize } = budget;
  const points = budgetStore(decider, rule);
  const estimators = new WeakMap<GraphQLSchema, CostEstimator>();
  const estimatorOf = (schema: GraphQLSchema): CostEstimator => {
    let estimate = estimators.get(schema);
    if (!estimate) estimators.set(schema, (estimate = createCostEstimator(schema, { listSize })));
    return estimate;
  };
  const checked = new WeakSet<GraphQLSchema>();
  const who = identityOf(config, rule.by);

  return {
    checkSchema(schema) {
      if (checked.has(schema)) return;
      checked.add(schema);
      if (carriesCostDirectives(schema)) return;
      process.emitWarning(
        'rateLimitDirective: a budget is on, but the schema carries no @cost and no @listSize, ' +
          `so every field is priced 1 and every list at ${listSize} items. Behind a federated ` +
          'gateway, composition dropped them: import @cost and @listSize from federation v2.9 ' +
          "or later in each subgraph's @link.",
        { code: UNPRICED_SCHEMA_WARNING },
      );
    },
    async admit(request) {
      const { document, operationName, context } = request;
      const operation = getOperationAST(document, operationName);
      if (!operation || operation.operation === OperationTypeNode.SUBSCRIPTION) return undefined;
      let estimate: number;
      try {
        estimate = estimatorOf(request.schema)(document, request.variables, operationName);
      } catch (error) {
        return { request, estimate: undefined, refusal: asGraphQLError(error) };
      }
      if (estimate > ceiling) {
        const refusal = new CostEstimatedTooExpensiveError({
          cost: estimate,
          maxCost,
          limit: rule.limit,
        });
        return { request, estimate, refusal: config.dryRun ? undefined : refusal };
      }
      // takes nothing, so whoever asks (introspection is free, as is `__typename`)
      if (estimate === 0) return { request, estimate };
      let identity: string;
      try {
        identity = await who(context);
      } catch (error) {
        return { request, estimate, refusal: asGraphQLError(error) };
      }
      const started = performance.now();
      const base = { field: rule.action, identity, rules: [rule], rule, cost: estimate };
      let outcome;
      try {
        outcome = await points.take(identity, estimate);
      } catch (caught) {
        const error = asError(caught);
        const allowed = config.onStoreError === 'allow';
        report(context, storeFailure(base, allowed, started, error));
        return {
          request,
          estimate,
          refusal: allowed ? undefined : new RateLimitUnavailableError(error),
        };
      }
      const { decision, decidedBy, error, store } = outcome;
      const state = decision.limits[0];
      const retryAfter = decision.allowed
        ? 0
        : Math.max(1, Math.ceil((state?.retryAfterMs ?? 0) / 1000));
      const blocked = !decision.allowed;
      const event: DecisionEvent = {
        ...base,
        allowed: decision.allowed,
        remaining: state?.remaining,
        resetMs: state?.resetMs,
        retryAfter,
        latencyMs: performance.now() - started,
        decision,
        dryRun: config.dryRun && blocked,
        decidedBy,
        error,
      };
      report(context, event);
      if (blocked) {
        const refusal = new RateLimitedError({
          action: rule.action,
          limit: rule.limit,
          window: rule.windowSeconds,
          retryAfter,
        });
        return { request, estimate, event, refusal: config.dryRun ? undefined : refusal };
      }
      const { receipt } = decision;
      return { request, estimate, event, taken: receipt && { store, identity, receipt } };
    },

    async settle({ request, estimate, refusal, taken, event }, data) {
      if (estimate === undefined) return undefined;
      const actual = refusal ? null : priced(request, data, estimate);
      let available = event?.decision ? event.remaining : undefined;
      const unused = actual === null ? 0 : estimate - actual;
      if (taken && event && unused > 0 && (await points.refund(taken, unused))) {
        available = Math.min(rule.limit, (event.remaining ?? 0) + unused);
        const resetMs = available >= rule.limit ? 0 : event.resetMs;
        reviseDecision(request.context, event, { ...event, remaining: available, resetMs });
      }
      return costExtension(rule, estimate, actual, available);
    },
  };
}

/** What the result cost; the estimate when it cannot be priced (so nothing goes back). */
function priced(request: BudgetRequest, data: unknown, estimate: number): number {
  const { schema, document, variables, operationName } = request;
  try {
    return actualCost(schema, document, data ?? null, { variables, operationName });
  } catch {
    return estimate;
  }
}

/**
 * Who an operation counts against: `identify`, or the `identities` source `by`, asked with the
 * context only, as no field is resolving (`info` is undefined, `args` empty).
 */
function identityOf(config: Config, by: string | undefined): (context: unknown) => Promise<string> {
  const noField = undefined as unknown as GraphQLResolveInfo;
  if (by === undefined) {
    const { identify } = config;
    return async (context) => identityFrom(() => identify(context, noField), 'identify');
  }
  const source = config.identities.get(by);
  return async (context) => identityFrom(() => source?.(context, noField, {}), `identities.${by}`);
}

/** A refusal as a client sees it: a GraphQLError keeps its code; anything else is internal. */
function asGraphQLError(error: unknown): GraphQLError {
  if (error instanceof GraphQLError) return error;
  const cause = asError(error);
  return new GraphQLError('Operation cost could not be estimated', {
    originalError: cause,
    extensions: { code: 'INTERNAL_SERVER_ERROR' },
  });
}
