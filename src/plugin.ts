import type { GraphQLSchema } from 'graphql';

import { decisionsOf, type DecisionEvent } from './decisions';
import type { Config } from './options';
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
          const events = decisionsOf(requestContext.contextValue).filter((e) => e.decision);
          if (events.length > 0) respond(requestContext, events, config);
        },
      };
    },
  };
}

function respond(
  { response }: ResponseContext,
  events: readonly DecisionEvent[],
  config: Config,
): void {
  const blocked = events.filter((e) => !e.allowed && !e.dryRun);
  const headline = blocked.length
    ? maxBy(blocked, (e) => e.retryAfter)
    : maxBy(events, (e) => -(e.remaining ?? 0));
  const { rule } = headline;
  const policy = JSON.stringify(rule.action);
  const { headers } = response.http;
  headers.set('ratelimit-policy', `${policy};q=${rule.limit};w=${rule.windowSeconds}`);
  headers.set(
    'ratelimit',
    `${policy};r=${Math.max(0, headline.remaining ?? 0)};t=${Math.ceil((headline.resetMs ?? 0) / 1000)}`,
  );
  if (blocked.length) headers.set('retry-after', String(headline.retryAfter));

  if (response.body.kind !== 'single') return;
  const result = response.body.singleResult;
  if (config.plugin.exposeLimits) {
    // a Map, then own properties: an action named `__proto__` is a key like any other
    const state = new Map<string, { limit: number; remaining: number; reset: number }>();
    for (const event of events) {
      event.rules.forEach((r, i) => {
        const s = event.decision?.limits[i];
        if (s) {
          state.set(r.action, {
            limit: r.limit,
            remaining: s.remaining,
            reset: Math.ceil(s.resetMs / 1000),
          });
        }
      });
    }
    result.extensions = { ...result.extensions, rateLimit: Object.fromEntries(state) };
  }
  if (config.plugin.status429 && blocked.length && everyRootFieldBlocked(result)) {
    response.http.status = 429;
  }
}

function everyRootFieldBlocked(result: SingleResult): boolean {
  const errors = result.errors ?? [];
  if (errors.length === 0 || errors.some((e) => e.extensions?.code !== 'RATE_LIMITED'))
    return false;
  return result.data == null || Object.values(result.data).every((v) => v === null);
}

function maxBy<T>(items: readonly T[], score: (item: T) => number): T {
  return items.reduce((best, item) => (score(item) > score(best) ? item : best));
}
