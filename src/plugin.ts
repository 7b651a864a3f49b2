import type { GraphQLSchema } from 'graphql';

import { decisionsOf } from './decisions';
import type { Config } from './options';
import { answers429, responseReport, type ResponseReport } from './response-report';
import { assertTransformed } from './transformed';

/**
 * The parts of Apollo Server's plugin interface this plugin uses, spelled out so that the
 * published types do not need `@apollo/server` installed; it is assignable to
 * `ApolloServerPlugin` of Apollo Server 4 and 5.
 */
export interface RateLimitPlugin {
  serverWillStart(service: { schema: GraphQLSchema }): Promise<void>;
  requestDidStart(): Promise<{
    willSendResponse(requestContext: ResponseContext): Promise<void>;
  }>;
}

/** What the plugin reads and writes of a response about to be sent. */
export interface ResponseContext {
  readonly contextValue: unknown;
  readonly response: {
    readonly http: {
      readonly headers: { set(name: string, value: string): unknown };
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
 * without having been passed through `transformer`.
 */
export function rateLimitPlugin(config: Config): RateLimitPlugin {
  return {
    async serverWillStart({ schema }) {
      assertTransformed(schema, config.name);
    },
    async requestDidStart() {
      return {
        async willSendResponse(requestContext) {
          const report = responseReport(decisionsOf(requestContext.contextValue), config.plugin);
          if (report) respond(requestContext, report, config);
        },
      };
    },
  };
}

function respond({ response }: ResponseContext, report: ResponseReport, config: Config): void {
  for (const [name, value] of report.headers) response.http.headers.set(name, value);
  if (response.body.kind !== 'single') return;
  const result = response.body.singleResult;
  if (report.limits) result.extensions = { ...result.extensions, rateLimit: report.limits };
  if (answers429(report, result, config.plugin)) response.http.status = 429;
}
