import { GraphQLError, type DocumentNode, type GraphQLSchema } from 'graphql';

import { refusalErrors, type Budget, type Charge } from '../budget/budget';
import { CostVariablesError } from '../cost/errors';
import type { CostExtension } from '../budget/extension';
import type { ExecutionTimeExtension } from '../budget/operation-call';
import { abortSignalOf } from '../decide/leases';
import { sourceTooDeep } from '../cost/bounds';
import { decisionsOf, keepDecisions, type DecisionEvent } from '../decision-events';
import { RateLimitUnavailableError } from '../errors';
import { mergeRateLimitHeaders } from './merge-headers';
import type { Config } from '../options/directive-options';
import { answers429, responseReport, type ResultShape } from './response-report';
import { createTransformedCheck } from '../schema/transform-mark';

/**
 * The parts of the envelop and GraphQL Yoga plugin interfaces this plugin uses, spelled out so
 * that the published types need neither `@envelop/core` nor `graphql-yoga` installed; it is
 * assignable to envelop's `Plugin` and to Yoga 5's `Plugin`.
 */
export interface RateLimitEnvelopPlugin {
  /**
   * envelop: refuses a schema that uses the directive but did not go through `transformer`, or
   * whose wrapped resolvers were replaced since; with a `budget`, warns (once per schema) when it
   * carries no `@cost` and no `@listSize`.
   */
  onSchemaChange(payload: { readonly schema: GraphQLSchema }): void;
  /**
   * envelop, with a `budget`: refuses, before graphql-js parses it by recursion, a document
   * nested too deep to price (`COST_QUERY_PARSE_FAILURE`, `reason: "TOO_DEEP"`, HTTP 400).
   */
  onParse?(payload: {
    readonly params: { readonly source: string | { readonly body: string } };
  }): void;
  /**
   * envelop: refuses the operation (a RateLimitConfigError naming the field) when a wrapped
   * field's resolver was replaced after the transform; with a `budget`, prices the operation and takes it from the budget, or stops it
   * before any resolver runs; once it ran, refunds what it did not use and adds
   * `extensions.cost`. Adds `extensions.rateLimit` when `exposeLimits` is on.
   */
  onExecute(payload: ExecuteStart): ExecuteHooks | Promise<ExecuteHooks>;
  /** Yoga: notes which operations (one, or several when batched) an HTTP request ran. */
  onExecutionResult(payload: {
    readonly request: object;
    readonly context: unknown;
    readonly result?: unknown;
  }): void;
  /**
   * Yoga (any whatwg-node server adapter): writes the headers, merged with rate-limit headers
   * the response already carries (a gateway's, from its subgraphs), and the 429 with
   * `status429`.
   */
  onResponse<TResponse extends HttpResponse>(payload: ResponseHook<TResponse>): void;
}

/** What envelop hands `onExecute`. */
export interface ExecuteStart {
  readonly args: {
    readonly contextValue?: unknown;
    readonly schema: GraphQLSchema;
    readonly document: DocumentNode;
    readonly variableValues?: Readonly<Record<string, unknown>> | null | undefined;
    readonly operationName?: string | null | undefined;
  };
  /** Answers `result` instead of executing. */
  readonly setResultAndStopExecution: (result: {
    readonly errors: readonly GraphQLError[];
  }) => void;
}

/** What `onExecute` hands back to envelop. */
export interface ExecuteHooks {
  onExecuteDone(payload: ExecuteDone): void | Promise<void>;
}

/** What envelop hands `onExecuteDone`. */
export interface ExecuteDone {
  readonly result: unknown;
  setResult(result: ExecutionResultShape): void;
}

/** The parts of a GraphQL execution result the plugin reads and extends. */
export interface ExecutionResultShape extends ResultShape {
  readonly errors?:
    | readonly {
        readonly extensions?: Record<string, unknown> | undefined;
        readonly path?: readonly (string | number)[] | undefined;
      }[]
    | undefined;
  readonly extensions?: Record<string, unknown> | undefined;
}

/** The parts of a Fetch API `Response` the plugin reads. */
export interface HttpResponse {
  readonly headers: { get(name: string): string | null; set(name: string, value: string): void };
  readonly body: unknown;
}

/** What a whatwg-node server adapter (Yoga's HTTP layer) hands `onResponse`. */
export interface ResponseHook<TResponse extends HttpResponse> {
  readonly request: object;
  readonly response: TResponse;
  setResponse(response: TResponse): void;
  readonly fetchAPI: {
    readonly Response: new (
      body: TResponse['body'],
      init: { status: number; statusText: string; headers: TResponse['headers'] },
    ) => TResponse;
  };
}

/** What the operations of one HTTP request left for its response. */
interface Pending {
  readonly events: DecisionEvent[];
  /** Whether every operation of the request (a batch has several) was wholly blocked. */
  everyOperationBlocked: boolean;
}

/**
 * The envelop plugin of one directive, for GraphQL Yoga and any envelop-based server: the same
 * headers, `extensions.rateLimit` and 429 as the Apollo plugin (the decision is shared, see
 * `response-report`), and the same refusal of an untransformed schema. The headers and the
 * status need an HTTP layer: Yoga's `onResponse`; a bare envelop gets the rest.
 */
export function rateLimitEnvelopPlugin(config: Config, budget?: Budget): RateLimitEnvelopPlugin {
  const checked = new WeakSet<GraphQLSchema>();
  // at start, and before each operation: a resolver replaced since would run unlimited
  const checkTransformed = createTransformedCheck(config.name);
  /** Adds `cost` (when given) and `rateLimit` (with `exposeLimits`) to the result's extensions. */
  const extend = (
    context: unknown,
    done: ExecuteDone,
    cost?: CostExtension,
    executionTime?: ExecutionTimeExtension,
  ): void => {
    const { result } = done;
    if (!isResult(result)) return;
    const { exposeLimits } = config.plugin;
    const rateLimit = exposeLimits && responseReport(decisionsOf(context), config.plugin)?.limits;
    if (!cost && !rateLimit && !executionTime) return;
    const extensions = {
      ...result.extensions,
      ...(cost && { cost }),
      ...(executionTime && { executionTime }),
      ...(rateLimit && { rateLimit }),
    };
    done.setResult({ ...result, extensions });
  };
  // a stream (subscription, `@defer`) is never priced: its estimate stays taken
  const settle = async (
    on: Budget,
    charge: Charge | undefined,
    context: unknown,
    done: ExecuteDone,
  ): Promise<void> => {
    const { result } = done;
    // a stream: its slot and time are settled as it starts, and nothing of its cost goes back
    if (charge?.hold && !isResult(result)) return void (await on.settle(charge, { data: null }));
    const aborted = abortSignalOf(context)?.aborted ?? false;
    const settled = charge && isResult(result) ? await on.settle(charge, result, aborted) : {};
    extend(context, done, settled.cost, settled.executionTime);
  };
  // keyed by the request object, so nothing outlives the request it belongs to
  const pending = new WeakMap<object, Pending>();
  return {
    ...(budget && {
      onParse({ params: { source } }: { params: { source: string | { body: string } } }) {
        // thrown before graphql-js parses: Yoga answers it as the client's error
        const refusal = sourceTooDeep(typeof source === 'string' ? source : source.body);
        if (refusal) throw refusal;
      },
    }),
    onSchemaChange({ schema }) {
      keepDecisions();
      checkTransformed(schema);
      // a schema factory may hand the same schema for every request: warn once for each
      if (checked.has(schema)) return;
      budget?.checkSchema(schema);
      checked.add(schema);
    },
    onExecute({ args, setResultAndStopExecution }) {
      keepDecisions();
      checkTransformed(args.schema);
      if (!budget) return { onExecuteDone: (done) => extend(args.contextValue, done) };
      const { schema, document, variableValues: variables, operationName } = args;
      const context = args.contextValue;
      return budget
        .admit({ schema, document, variables, operationName, context })
        .then((charge): ExecuteHooks => {
          if (charge?.refusal) setResultAndStopExecution({ errors: answered(charge.refusal) });
          return { onExecuteDone: (done) => settle(budget, charge, context, done) };
        });
    },
    onExecutionResult({ request, context, result }) {
      const events = decisionsOf(context);
      const report = responseReport(events, config.plugin);
      const blocked = !!report && isResult(result) && answers429(report, result, config.plugin);
      const seen = pending.get(request);
      if (seen) {
        seen.events.push(...events);
        seen.everyOperationBlocked &&= blocked;
      } else {
        pending.set(request, { events: [...events], everyOperationBlocked: blocked });
      }
    },
    onResponse(hook) {
      const { request, response, fetchAPI } = hook;
      const seen = pending.get(request);
      pending.delete(request);
      const report = seen && responseReport(seen.events, config.plugin);
      const headers = report
        ? mergeRateLimitHeaders(response.headers, report.headers, report.hitsLeft)
        : mergeRateLimitHeaders(response.headers, []);
      for (const [name, value] of headers) response.headers.set(name, value);
      if (report && seen.everyOperationBlocked) {
        hook.setResponse(
          new fetchAPI.Response(response.body, {
            status: 429,
            statusText: 'Too Many Requests',
            headers: response.headers,
          }),
        );
      }
    },
  };
}

/**
 * A refusal's errors as the client gets them: variables that do not coerce as graphql-tools'
 * executor (Yoga's) answers them, GraphQL's own errors with HTTP status 400; a store that could
 * not decide with 503.
 */
function answered(refusal: GraphQLError): readonly GraphQLError[] {
  // the store could not decide: 503 tells clients to retry (Yoga would answer 500)
  if (refusal instanceof RateLimitUnavailableError) return [withStatus(refusal, 503)];
  const errors = refusalErrors(refusal);
  if (!(refusal instanceof CostVariablesError)) return errors;
  return errors.map((e) => withStatus(e, 400));
}

/** `error` answered with HTTP `status` (`extensions.http`, which Yoga reads and never shows). */
function withStatus(error: GraphQLError, status: number): GraphQLError {
  return new GraphQLError(error.message, {
    nodes: error.nodes,
    source: error.source,
    positions: error.positions,
    originalError: error.originalError,
    extensions: { ...error.extensions, http: { status } },
  });
}

/** A single result; a stream (subscription, `@defer`) is an async iterable and is left alone. */
function isResult(result: unknown): result is ExecutionResultShape {
  return typeof result === 'object' && result !== null && !(Symbol.asyncIterator in result);
}
