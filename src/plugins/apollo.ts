import {
  buildASTSchema,
  GraphQLError,
  parse,
  type DocumentNode,
  type GraphQLSchema,
} from 'graphql';

import type { Budget, Charge } from '../budget/budget';
import { sourceTooDeep } from '../cost/bounds';
import { abortSignalOf } from '../decide/leases';
import { carriesCostDirectives } from '../cost/check';
import { CostVariablesError } from '../cost/errors';
import { decisionsOf, keepDecisions } from '../decision-events';
import { OperationNotFoundError, RateLimitUnavailableError } from '../errors';
import { mergeRateLimitHeaders } from './merge-headers';
import type { Config } from '../options/directive-options';
import { answers429, responseReport, type ResponseReport } from './response-report';
import { createTransformedCheck } from '../schema/transform-mark';

/**
 * The parts of Apollo Server's plugin interface this plugin uses, spelled out so that the
 * published types do not need `@apollo/server` installed; it is assignable to
 * `ApolloServerPlugin` of Apollo Server 4 and 5.
 */
export interface RateLimitPlugin {
  serverWillStart(service: { schema: GraphQLSchema }): Promise<ServerListener | void>;
  requestDidStart(): Promise<RequestListener>;
}

/** The plugin's hooks for a started server, with a `budget`. */
export interface ServerListener {
  /**
   * For each schema served: prices operations from it, or, at a gateway (`@apollo/gateway`),
   * whose API schema carries no `@cost` and no `@listSize`, from its supergraph, which does;
   * warns when neither carries any.
   */
  schemaDidLoadOrUpdate(schemaContext: {
    readonly apiSchema: GraphQLSchema;
    readonly coreSupergraphSdl?: string | undefined;
  }): void;
}

/** The plugin's hooks for one request. */
export interface RequestListener {
  /**
   * With a `budget`: notes a document nested too deep to price, which graphql-js would parse,
   * or validate, by recursion until the stack runs out; once parsed, it is put aside for one
   * that fails validation. `willSendResponse` answers the parse or validation error as
   * `COST_QUERY_PARSE_FAILURE` with `reason: "TOO_DEEP"` (HTTP 400).
   */
  parsingDidStart?(requestContext: ParsingContext): Promise<ParsingDidEnd | void>;
  /** With a `budget`: prices the operation and takes it from the budget, or refuses it. */
  didResolveOperation?(requestContext: OperationContext): Promise<void>;
  willSendResponse(requestContext: ResponseContext): Promise<void>;
}

/** What the plugin reads of a document about to be parsed, and may put aside once it is. */
export interface ParsingContext {
  readonly source?: string | undefined;
  document?: DocumentNode | undefined;
}

/** Called once the document is parsed, with the parser's error when it failed. */
export type ParsingDidEnd = (error?: Error) => Promise<void>;

/** What the plugin reads of an operation about to run. */
export interface OperationContext {
  readonly contextValue: unknown;
  readonly schema: GraphQLSchema;
  readonly document: DocumentNode;
  readonly request: {
    readonly variables?: Readonly<Record<string, unknown>> | undefined;
    /** The name the client sent, which execution will look for. */
    readonly operationName?: string | undefined;
  };
}

/** What the plugin reads and writes of a response about to be sent. */
export interface ResponseContext {
  readonly contextValue: unknown;
  readonly response: {
    readonly http: {
      readonly headers: {
        get(name: string): string | null | undefined;
        set(name: string, value: string): unknown;
      };
      status?: number | undefined;
    };
    readonly body:
      | { readonly kind: 'single'; readonly singleResult: SingleResult }
      | { readonly kind: 'incremental' };
  };
}

interface SingleResult {
  data?: Record<string, unknown> | null | undefined;
  errors?:
    | readonly {
        message?: string;
        extensions?: Record<string, unknown> | undefined;
        path?: readonly (string | number)[] | undefined;
      }[]
    | undefined;
  extensions?: Record<string, unknown> | undefined;
}

/**
 * The Apollo Server plugin of one directive: headers in the form of the IETF httpapi
 * rate-limit-headers draft from the most constrained limit an operation hit
 * (`RateLimit-Policy: "submit";q=3;w=60`, `RateLimit: "submit";r=0;t=42`), `Retry-After` in
 * seconds when a field was blocked, optionally the limit state in `extensions.rateLimit` and a
 * 429 when every root field was blocked. At start it refuses a schema that uses the directive
 * without having been passed through `transformer`, and with a `budget` warns when the schema
 * carries no `@cost` and no `@listSize`.
 */
export function rateLimitPlugin(config: Config, budget?: Budget): RateLimitPlugin {
  const willSendResponse = async (requestContext: ResponseContext): Promise<void> => {
    const report = responseReport(decisionsOf(requestContext.contextValue), config.plugin);
    if (report) respond(requestContext, report, config);
  };
  // what each served schema is priced from: itself, or a gateway's supergraph
  const pricing = new WeakMap<GraphQLSchema, GraphQLSchema>();
  // at start, and before each operation: a resolver replaced since would run unlimited
  const checkTransformed = createTransformedCheck(config.name);
  return {
    async serverWillStart({ schema }) {
      keepDecisions();
      checkTransformed(schema);
      if (!budget) return;
      return {
        schemaDidLoadOrUpdate({ apiSchema, coreSupergraphSdl }) {
          const priced = coreSupergraphSdl ? pricedBy(apiSchema, coreSupergraphSdl) : apiSchema;
          pricing.set(apiSchema, priced);
          budget.checkSchema(priced);
        },
      };
    },
    async requestDidStart() {
      if (!budget) {
        return {
          didResolveOperation: async ({ schema }) => checkTransformed(schema),
          willSendResponse,
        };
      }
      let charge: Charge | undefined;
      let tooDeep: GraphQLError | undefined;
      return {
        // Apollo Server answers what this hook throws as an internal error, and parses anyway:
        // the refusal replaces the parse error, or the operation, whichever comes
        async parsingDidStart(parsing) {
          tooDeep = parsing.source === undefined ? undefined : sourceTooDeep(parsing.source);
          if (!tooDeep) return;
          // Apollo declares `document` read-only, but validating this one would recurse past
          // the stack's end too, an internal error; one that fails validation is never stored
          return async (error) => {
            if (!error) parsing.document = UNPRICEABLE;
          };
        },
        // after validation, before execution: a refusal thrown here runs no resolver
        // the name the client sent: Apollo's own `operationName` is null for an operation it did
        // not find, which would have the budget price the document's only operation instead
        async didResolveOperation({ contextValue, schema, document, request }) {
          // parsed after all (deep, yet within the parser's stack): refused as Yoga refuses it
          if (tooDeep) throw tooDeep;
          checkTransformed(schema);
          const { variables, operationName } = request;
          charge = await budget.admit({
            schema: pricing.get(schema) ?? schema,
            document,
            variables,
            operationName,
            context: contextValue,
          });
          if (charge?.refusal) throw answeredAs200(charge.refusal);
        },
        async willSendResponse(requestContext) {
          const { body } = requestContext.response;
          if (tooDeep && body.kind === 'single' && isRefusedDocument(body.singleResult)) {
            const { code, reason } = tooDeep.extensions;
            body.singleResult.errors = [{ message: tooDeep.message, extensions: { code, reason } }];
          }
          // a streamed (incremental) result is never priced: its estimate stays taken
          if (charge && body.kind === 'single') {
            const aborted = abortSignalOf(requestContext.contextValue)?.aborted ?? false;
            const { cost, executionTime } = await budget.settle(charge, body.singleResult, aborted);
            if (cost) {
              const { extensions } = body.singleResult;
              // most results carry no extensions yet: a spread of nothing still costs a microsecond
              body.singleResult.extensions = extensions ? { ...extensions, cost } : { cost };
            }
            if (executionTime) {
              body.singleResult.extensions = { ...body.singleResult.extensions, executionTime };
            }
          } else if (charge?.hold) {
            // an incremental response: its slot and time are settled as its first payload goes
            await budget.settle(charge, { data: null });
          }
          await willSendResponse(requestContext);
        },
      };
    },
  };
}

/**
 * Apollo Server answers an error thrown before execution with HTTP 500 unless the error names a
 * status: a refused operation is answered like a blocked field, 200 (or 429 with `status429`);
 * an operation not found, or variables that do not coerce, 400, as Apollo Server answers them;
 * a budget whose store could not decide, 503.
 */
function answeredAs200(refusal: GraphQLError): GraphQLError {
  // as Apollo Server 5 answers variables that do not coerce (an error thrown here is answered
  // alone: the first of GraphQL's errors)
  if (refusal instanceof CostVariablesError) {
    const first = refusal.errors[0] ?? refusal;
    return new GraphQLError(first.message, {
      nodes: first.nodes,
      source: first.source,
      positions: first.positions,
      originalError: first,
      extensions: { ...first.extensions, code: 'BAD_USER_INPUT', http: { status: 400 } },
    });
  }
  // the store could not decide: 503 tells clients to retry, where a 500 would not
  const status =
    refusal instanceof OperationNotFoundError
      ? 400
      : refusal instanceof RateLimitUnavailableError
        ? 503
        : 200;
  return new GraphQLError(refusal.message, {
    originalError: refusal,
    extensions: { ...refusal.extensions, http: { status } },
  });
}

/**
 * The schema a gateway's operations are priced from: its supergraph, which keeps the subgraphs'
 * `@cost` and `@listSize` (federation v2.9 and later) where the API schema it serves drops them.
 * The supergraph holds every field of the API schema, so an operation valid on one is on both.
 */
function pricedBy(apiSchema: GraphQLSchema, supergraphSdl: string): GraphQLSchema {
  if (carriesCostDirectives(apiSchema)) return apiSchema;
  const supergraph = buildASTSchema(parse(supergraphSdl), { assumeValidSDL: true });
  return carriesCostDirectives(supergraph) ? supergraph : apiSchema;
}

/** What a document too deep to price is validated as instead: it fails (no such field). */
const UNPRICEABLE = parse('{ __tooDeepToPrice }');

/** Whether the response is Apollo Server's refusal of a document it could not parse or validate. */
function isRefusedDocument(result: SingleResult): boolean {
  const code = result.errors?.[0]?.extensions?.code;
  return code === 'GRAPHQL_PARSE_FAILED' || code === 'GRAPHQL_VALIDATION_FAILED';
}

function respond({ response }: ResponseContext, report: ResponseReport, config: Config): void {
  // merged with what the response carries already (a gateway's, copied from its subgraphs)
  const { headers } = response.http;
  for (const [name, value] of mergeRateLimitHeaders(headers, report.headers, report.hitsLeft)) {
    headers.set(name, value);
  }
  if (response.body.kind !== 'single') return;
  const result = response.body.singleResult;
  if (report.limits) result.extensions = { ...result.extensions, rateLimit: report.limits };
  if (answers429(report, result, config.plugin)) response.http.status = 429;
}
