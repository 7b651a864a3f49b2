import { GraphQLError, type DocumentNode, type GraphQLSchema } from 'graphql';

import type { Budget, Charge } from './budget/budget';
import { decisionsOf } from './decisions';
import type { Config } from './options';
import { mergeRateLimitHeaders } from './merge-headers';
import { answers429, responseReport, type ResponseReport } from './response-report';
import { assertTransformed } from './transformed';

/**
 * The parts of Apollo Server's plugin interface this plugin uses, spelled out so that the
 * published types do not need `@apollo/server` installed; it is assignable to
 * `ApolloServerPlugin` of Apollo Server 4 and 5.
 */
export interface RateLimitPlugin {
  serverWillStart(service: { schema: GraphQLSchema }): Promise<void>;
  requestDidStart(): Promise<RequestListener>;
}

/** The plugin's hooks for one request. */
export interface RequestListener {
  /** With a `budget`: prices the operation and takes it from the budget, or refuses it. */
  didResolveOperation?(requestContext: OperationContext): Promise<void>;
  willSendResponse(requestContext: ResponseContext): Promise<void>;
}

/** What the plugin reads of an operation about to run. */
export interface OperationContext {
  readonly contextValue: unknown;
  readonly schema: GraphQLSchema;
  readonly document: DocumentNode;
  readonly operationName: string | null;
  readonly request: { readonly variables?: Readonly<Record<string, unknown>> | undefined };
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
  errors?: readonly { extensions?: Record<string, unknown> | undefined }[] | undefined;
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
  return {
    async serverWillStart({ schema }) {
      assertTransformed(schema, config.name);
      budget?.checkSchema(schema);
    },
    async requestDidStart() {
      if (!budget) return { willSendResponse };
      let charge: Charge | undefined;
      return {
        // after validation, before execution: a refusal thrown here runs no resolver
        async didResolveOperation({ contextValue, schema, document, operationName, request }) {
          const { variables } = request;
          charge = await budget.admit({
            schema,
            document,
            variables,
            operationName,
            context: contextValue,
          });
          if (charge?.refusal) throw answeredAs200(charge.refusal);
        },
        async willSendResponse(requestContext) {
          const { body } = requestContext.response;
          // a streamed (incremental) result is never priced: its estimate stays taken
          if (charge && body.kind === 'single') {
            const cost = await budget.settle(charge, body.singleResult.data);
            if (cost) body.singleResult.extensions = { ...body.singleResult.extensions, cost };
          }
          await willSendResponse(requestContext);
        },
      };
    },
  };
}

/**
 * Apollo Server answers an error thrown before execution with HTTP 500 unless the error names a
 * status: a refused operation is answered like a blocked field, 200 (or 429 with `status429`).
 */
function answeredAs200(refusal: GraphQLError): GraphQLError {
  return new GraphQLError(refusal.message, {
    originalError: refusal,
    extensions: { ...refusal.extensions, http: { status: 200 } },
  });
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
