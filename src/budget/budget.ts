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
import { CostVariablesError } from '../cost/errors';
import { createCostEstimator, type CostEstimator } from '../cost/estimate';
import type { Variables } from '../cost/input-cost';
import { reviseDecision, type DecisionEvent, type Reporter } from '../decision-events';
import { decidedHit, failedHit } from '../decide/decided-hit';
import type { Decider } from '../decide/decider';
import {
  asError,
  CostEstimatedTooExpensiveError,
  OperationNotFoundError,
  RateLimitConfigError,
  UnauthenticatedError,
} from '../errors';
import type { BudgetConfig } from '../options/budget-options';
import { warn, WARNING_CODES } from '../warnings';
import type { Config } from '../options/directive-options';
import { sourceReader } from '../identities/identity-sources';
import { costExtension, type CostExtension } from './extension';
import { onlyIntrospection } from './free';
import { budgetStore, type Taken } from './budget-store';
import { errorsNulledWork, type RanResult } from './work';
import { operationCalls, type ExecutionTimeExtension, type OperationHold } from './operation-call';

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
  /**
   * Why the operation must not run (no resolver may); undefined when it may. Variables that do
   * not coerce are a CostVariablesError: answer its `errors`, GraphQL's own (see
   * {@link refusalErrors}).
   */
  readonly refusal?: GraphQLError | undefined;
  /** What was taken, when it can be refunded. */
  readonly taken?: Taken | undefined;
  /** The take as it was reported, when a store decided it. */
  readonly event?: DecisionEvent | undefined;
  /** With secondary limits: what the admitted operation holds until it is settled. */
  readonly hold?: OperationHold | undefined;
}

/** What a budget adds to an operation's `extensions`. */
export interface BudgetExtensions {
  /** In Shopify's shape; absent when the operation could not be priced. */
  readonly cost?: CostExtension | undefined;
  /** With `budget.time`: the time the operation was charged and what is left. */
  readonly executionTime?: ExecutionTimeExtension | undefined;
}

/** An operation cost budget, for the server plugins to apply around execution. */
export interface Budget {
  /**
   * Reads who asks, then prices the operation and takes its estimate from their budget;
   * undefined for an operation the budget does not charge (a subscription). An operation the
   * document does not hold (by `operationName`), or whose variables do not coerce, is refused
   * and takes nothing; so is any caller without an identity (UNAUTHENTICATED, before pricing),
   * but for a query of introspection fields and `__typename` alone, which costs nothing and is
   * free for anyone.
   */
  admit(request: BudgetRequest): Promise<Charge | undefined>;
  /**
   * Once the operation ran (`result` is what it answered; its last payload), or was refused:
   * refunds what it did not use, and answers its `extensions.cost` (undefined when it could
   * not be priced). With secondary limits, in the same store call: charges its execution time
   * (plus the penalty when `aborted`) and releases its slot; answers `executionTime` too.
   */
  settle(charge: Charge, result: RanResult, aborted?: boolean): Promise<BudgetExtensions>;
  /**
   * At start, for each schema served (once per schema): warns when it carries no `@cost` and no
   * `@listSize` at all (behind a gateway, the sign that composition dropped them).
   */
  checkSchema(schema: GraphQLSchema): void;
  /** Whether a server plugin has brought it an operation: until then it charges nothing. */
  enforced(): boolean;
}

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
  const { rule, ceiling, maxCost, listSize, secondary } = budget;
  const points = budgetStore(decider, rule);
  for (const on of [config.store, config.fallbackStore]) {
    if (secondary && on && (!on.admitOperation || !on.settleOperation)) {
      throw new RateLimitConfigError(
        'rateLimitDirective: budget.inFlight and budget.time need a store that decides an ' +
          'operation in one call (admitOperation, settleOperation): createRedisStore, ' +
          'createMemoryStore or createUpstashStore',
      );
    }
  }
  const operations = secondary && operationCalls(secondary, decider, report);
  const estimators = new WeakMap<GraphQLSchema, CostEstimator>();
  const estimatorOf = (schema: GraphQLSchema): CostEstimator => {
    let estimate = estimators.get(schema);
    if (!estimate) estimators.set(schema, (estimate = createCostEstimator(schema, { listSize })));
    return estimate;
  };
  const checked = new WeakSet<GraphQLSchema>();
  // an operation has no field: its identity source is asked with the context only
  const who = sourceReader(rule.by, config);
  const noField = undefined as unknown as GraphQLResolveInfo;
  let enforced = false;

  return {
    enforced: () => enforced,
    checkSchema(schema) {
      if (checked.has(schema)) return;
      checked.add(schema);
      if (carriesCostDirectives(schema)) return;
      warn(
        'rateLimitDirective: a budget is on, but the schema (at a gateway, its supergraph too) ' +
          'carries no @cost and no @listSize, so every field is priced 1 and every list at ' +
          `${listSize} items. Declare them on the fields that cost; behind a federated gateway, ` +
          "import them from federation v2.9 or later in each subgraph's @link (composition " +
          'drops them otherwise).',
        WARNING_CODES.UNPRICED_SCHEMA,
      );
    },
    async admit(request) {
      enforced = true;
      const { document, operationName, context } = request;
      const operation = getOperationAST(document, operationName);
      // what the budget cannot find it cannot price: GraphQL would refuse it too, but a server
      // may run another operation than the one it told us (Mercurius' hooks pass no name)
      if (!operation) {
        return { request, estimate: undefined, refusal: new OperationNotFoundError(operationName) };
      }
      if (operation.operation === OperationTypeNode.SUBSCRIPTION) return undefined;
      // whoever asks, priced without the estimator: introspection is free, as is `__typename`
      if (onlyIntrospection(document, operation)) return { request, estimate: 0 };
      // identity first: a caller no one can charge never reaches the estimator
      let identity: string;
      try {
        // most sources answer at once: no turn of the microtask queue for them
        const found = who(context, noField, {});
        identity = typeof found === 'string' ? found : await found;
      } catch (error) {
        const refusal = error instanceof UnauthenticatedError ? nobody() : asGraphQLError(error);
        return { request, estimate: undefined, refusal };
      }
      let estimate: number;
      try {
        estimate = estimatorOf(request.schema)(document, request.variables, operationName);
      } catch (error) {
        // GraphQL's own errors, from the budget itself: an engine that coerces variables its own
        // way (graphql-jit) would run what graphql-js refuses, and it would run uncharged
        if (error instanceof CostVariablesError)
          return { request, estimate: undefined, refusal: error };
        return { request, estimate: undefined, refusal: asGraphQLError(error) };
      }
      // never NaN or a fraction: the store would refuse it, and that would pass for its failure
      if (!Number.isSafeInteger(estimate) || estimate > ceiling) {
        const refusal = new CostEstimatedTooExpensiveError({
          cost: estimate,
          maxCost,
          limit: rule.limit,
        });
        return { request, estimate, refusal: config.dryRun ? undefined : refusal };
      }
      const base = { field: rule.action, identity, rules: [rule], rule, cost: estimate };
      // no store decided: reported, and refused unless `onStoreError` allows it
      const storeFailed = (caught: unknown, started: number): Charge => {
        const { event, refusal } = failedHit(base, config.onStoreError, started, caught);
        report(context, event);
        return { request, estimate, refusal };
      };
      // with secondary limits, one store call decides them with the budget, all or nothing
      if (operations) {
        const started = performance.now();
        try {
          const admitted = await operations.admit(context, identity, rule, estimate, config.dryRun);
          const { hold, refusal, budgetEvent: event } = admitted;
          const taken = hold?.ticket.receipt && {
            store: hold.store,
            identity,
            receipt: hold.ticket.receipt,
          };
          return { request, estimate, refusal, hold, event, taken };
        } catch (caught) {
          return storeFailed(caught, started);
        }
      }
      // takes nothing, so no store call
      if (estimate === 0) return { request, estimate };
      const started = performance.now();
      let outcome;
      try {
        outcome = await points.take(identity, estimate);
      } catch (caught) {
        return storeFailed(caught, started);
      }
      const latencyMs = performance.now() - started;
      const { event, refusal } = decidedHit(base, outcome, 0, latencyMs, config.dryRun);
      report(context, event);
      if (!event.allowed) return { request, estimate, event, refusal };
      const { decision, store } = outcome;
      return { request, estimate, event, taken: { store, identity, receipt: decision.receipt } };
    },

    async settle({ request, estimate, refusal, taken, event, hold }, result, aborted = false) {
      if (estimate === undefined) return {};
      const actual = refusal ? null : worked(request, result, estimate);
      let available = event?.decision ? event.remaining : undefined;
      const unused = actual === null ? 0 : Math.max(0, estimate - actual);
      if (hold && operations) {
        const { states, chargedMs } = await operations.settle(hold, taken ? unused : 0, aborted);
        const budgetState = hold.limits.budget ? states?.[0] : undefined;
        if (hold.limits.budget) available = budgetState?.remaining;
        if (event && budgetState && unused > 0) {
          const { remaining, resetMs } = budgetState;
          reviseDecision(request.context, event, revised(event, remaining, resetMs));
        }
        return {
          cost: costExtension(rule, estimate, actual, available),
          executionTime: operations.timeExtension(hold, chargedMs, states),
        };
      }
      // nothing to refund: no second call, the budget as the take left it (which the
      // store answered); otherwise as the refund leaves it, null when that cannot be read
      if (taken && event && unused > 0) {
        const state = await points.refund(taken, unused);
        available = state?.remaining;
        if (state) {
          const { remaining, resetMs } = state;
          reviseDecision(request.context, event, revised(event, remaining, resetMs));
        }
      }
      return { cost: costExtension(rule, estimate, actual, available) };
    },
  };
}

/**
 * The errors a refusal is answered with: GraphQL's own coercion errors for variables that do
 * not coerce (as graphql-js' `execute` answers them), else the refusal itself.
 */
export function refusalErrors(refusal: GraphQLError): readonly GraphQLError[] {
  return refusal instanceof CostVariablesError ? refusal.errors : [refusal];
}

/** The budget's refusal of a request without an identity: no field speaks here. */
function nobody(): UnauthenticatedError {
  return new UnauthenticatedError(
    'Authentication required: operations are charged to a per-identity cost budget',
  );
}

/** `event` once its budget stands at `remaining`: written out, as a spread costs far more. */
function revised(event: DecisionEvent, remaining: number, resetMs: number): DecisionEvent {
  const { field, identity, rules, rule, cost, allowed, retryAfter, latencyMs } = event;
  const { decision, dryRun, decidedBy, error } = event;
  return {
    field,
    identity,
    rules,
    rule,
    cost,
    allowed,
    remaining,
    resetMs,
    retryAfter,
    latencyMs,
    decision,
    dryRun,
    decidedBy,
    error,
  };
}

/**
 * What the operation's work cost: what its result cost, or the estimate (so nothing goes back)
 * when errors nulled work that ran, or when the result cannot be priced.
 */
function worked(request: BudgetRequest, result: RanResult, estimate: number): number {
  if (errorsNulledWork(result)) return estimate;
  const { schema, document, variables, operationName } = request;
  try {
    return actualCost(schema, document, result.data ?? null, { variables, operationName });
  } catch {
    return estimate;
  }
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
