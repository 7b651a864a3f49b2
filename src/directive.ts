import {
  defaultFieldResolver,
  type GraphQLFieldResolver,
  type GraphQLResolveInfo,
  type GraphQLSchema,
} from 'graphql';
import { MapperKind, mapSchema } from '@graphql-tools/utils';

import {
  RateLimitConfigError,
  RateLimitedError,
  RateLimitUnavailableError,
  UnauthenticatedError,
} from './errors';
import { rulesFor, type RateLimitRule } from './rules';
import type { Decision, LimitState, RateLimitStore } from './stores/store';
import { withTimeout } from './timeout';
import { LIMITED, rateLimitPlugin, type RateLimitPlugin } from './plugin';
import { recordDecision } from './request-decisions';

/** Who a hit is counted against; `undefined`, `null` or `''` means nobody (UNAUTHENTICATED). */
export type Identify<TContext> = (
  context: TContext,
  info: GraphQLResolveInfo,
) => string | number | null | undefined;

/** What to do when the store fails or times out. */
export type StoreErrorPolicy = 'deny' | 'allow';

/** What happened to one hit on a rate-limited field; given to `onDecision`. */
export interface DecisionEvent {
  /** The field, as `Type.field`. */
  readonly field: string;
  readonly identity: string;
  /** Every limit of the field, in directive order. */
  readonly rules: readonly RateLimitRule[];
  /** The limit the event speaks of: the one that blocked longest, else the one with least left. */
  readonly rule: RateLimitRule;
  /** Whether the resolver ran (with `onStoreError: 'allow'`, also after a store error). */
  readonly allowed: boolean;
  /** Units left on `rule` after this hit; undefined when the store failed. */
  readonly remaining: number | undefined;
  /** Milliseconds until `rule` is whole again; undefined when the store failed. */
  readonly resetMs: number | undefined;
  /** Whole seconds until the hit would pass; 0 when it passed. */
  readonly retryAfter: number;
  /** How long the store took to answer (or to fail), in milliseconds. */
  readonly latencyMs: number;
  /** The store's failure or timeout, when there was one. */
  readonly error?: Error | undefined;
  /** Every limit's state, when the store answered. */
  readonly decision?: Decision | undefined;
  /** True when `dryRun` let a hit through that the limits blocked. */
  readonly dryRun?: boolean | undefined;
}

/** Options of {@link rateLimitDirective}. */
export interface RateLimitDirectiveOptions<TContext = any> {
  /** Where counters live: `createRedisStore(...)` or `createMemoryStore()`. */
  readonly store: RateLimitStore;
  /** The identity a hit counts against. @default (context) => context.team?.id */
  readonly identify?: Identify<TContext> | undefined;
  /** `'deny'` answers RATE_LIMIT_UNAVAILABLE; `'allow'` runs the resolver. @default 'deny' */
  readonly onStoreError?: StoreErrorPolicy | undefined;
  /** Bound on one store call, in milliseconds. @default 250 */
  readonly timeoutMs?: number | undefined;
  /** The directive's name in SDL. @default 'rateLimit' */
  readonly name?: string | undefined;
  /**
   * Called after every decided hit, and after every store failure, to log or meter. It runs
   * synchronously on the request path; what it throws is reported as a process warning.
   * @default undefined
   */
  readonly onDecision?: ((event: DecisionEvent) => void) | undefined;
  /**
   * Decide and report (hooks, headers, metrics) but never block: a blocked hit resolves anyway,
   * reported with `allowed: false` and `dryRun: true`. For measuring a new limit before
   * enforcing it. @default false
   */
  readonly dryRun?: boolean | undefined;
  /**
   * Add the limit state of every action a response touched to its `extensions.rateLimit`
   * (`{ [action]: { limit, remaining, reset } }`, reset in seconds); needs `plugin`.
   * @default false
   */
  readonly exposeLimits?: boolean | undefined;
  /**
   * With `plugin`: answer HTTP 429 (with `Retry-After`) when every root field of the operation
   * was blocked. By default a blocked field is a field error in a normal 200 response.
   * @default false
   */
  readonly status429?: boolean | undefined;
}

/** What {@link rateLimitDirective} returns. */
export interface RateLimitDirective {
  /** SDL of the directive and its `RateLimitAlgorithm` enum, to merge into the schema's. */
  readonly typeDefs: string;
  /** Returns a new schema whose rate-limited fields decide before they resolve. */
  readonly transformer: (schema: GraphQLSchema) => GraphQLSchema;
  /**
   * An Apollo Server plugin: `RateLimit-Policy`, `RateLimit` and `Retry-After` headers from the
   * decisions of each operation, and a start-up check that the served schema went through
   * `transformer` (a declared but unapplied directive would silently limit nothing).
   */
  readonly plugin: RateLimitPlugin;
}

const DEFAULTS = {
  identify: (context: any): string | number | undefined => context?.team?.id,
  onStoreError: 'deny',
  timeoutMs: 250,
  name: 'rateLimit',
} as const;

/**
 * The `@rateLimit` directive: its SDL, and a transformer that wraps every field carrying it
 * (or whose object type carries it) so that the field's limits are decided in one atomic
 * store call before the resolver runs. Throws RateLimitConfigError for bad options.
 */
export function rateLimitDirective<TContext = any>(
  options: RateLimitDirectiveOptions<TContext>,
): RateLimitDirective {
  const config = resolveOptions(options);
  const { name } = config;
  const typeDefs = `directive @${name}(
  action: String!
  window: Int!
  limit: Int!
  algorithm: RateLimitAlgorithm = FIXED_WINDOW
  cost: Int = 1
) repeatable on FIELD_DEFINITION | OBJECT

enum RateLimitAlgorithm {
  FIXED_WINDOW
  SLIDING_WINDOW
  TOKEN_BUCKET
}
`;
  const transformer = (schema: GraphQLSchema): GraphQLSchema =>
    mapSchema(schema, {
      [MapperKind.OBJECT_FIELD]: (field, fieldName, typeName) => {
        const rules = rulesFor(schema, typeName, fieldName, field, name);
        if (rules.length === 0) return field;
        return {
          ...field,
          resolve: limited(
            field.resolve ?? defaultFieldResolver,
            `${typeName}.${fieldName}`,
            rules,
            config,
          ),
          extensions: { ...field.extensions, [LIMITED]: true },
        };
      },
    });
  return { typeDefs, transformer, plugin: rateLimitPlugin(config) };
}

/** The resolved options; shared with the plugin. */
export interface Config<TContext = any> {
  readonly store: RateLimitStore;
  readonly identify: Identify<TContext>;
  readonly onStoreError: StoreErrorPolicy;
  readonly timeoutMs: number;
  readonly name: string;
  readonly onDecision: ((event: DecisionEvent) => void) | undefined;
  readonly dryRun: boolean;
  readonly exposeLimits: boolean;
  readonly status429: boolean;
}

function resolveOptions<TContext>(options: RateLimitDirectiveOptions<TContext>): Config<TContext> {
  if (!options || typeof options.store?.hit !== 'function') {
    throw new RateLimitConfigError('rateLimitDirective: `store` must be a RateLimitStore');
  }
  const config: Config<TContext> = {
    store: options.store,
    identify: options.identify ?? DEFAULTS.identify,
    onStoreError: options.onStoreError ?? DEFAULTS.onStoreError,
    timeoutMs: options.timeoutMs ?? DEFAULTS.timeoutMs,
    name: options.name ?? DEFAULTS.name,
    onDecision: options.onDecision,
    dryRun: options.dryRun ?? false,
    exposeLimits: options.exposeLimits ?? false,
    status429: options.status429 ?? false,
  };
  if (config.onDecision !== undefined && typeof config.onDecision !== 'function') {
    throw new RateLimitConfigError('rateLimitDirective: `onDecision` must be a function');
  }
  if (typeof config.identify !== 'function') {
    throw new RateLimitConfigError('rateLimitDirective: `identify` must be a function');
  }
  if (config.onStoreError !== 'deny' && config.onStoreError !== 'allow') {
    throw new RateLimitConfigError(
      `rateLimitDirective: onStoreError must be 'deny' or 'allow', got ${JSON.stringify(config.onStoreError)}`,
    );
  }
  if (!Number.isFinite(config.timeoutMs) || config.timeoutMs <= 0) {
    throw new RateLimitConfigError(
      `rateLimitDirective: timeoutMs must be a positive number of milliseconds, got ${String(config.timeoutMs)}`,
    );
  }
  if (!/^[_A-Za-z][_0-9A-Za-z]*$/.test(config.name)) {
    throw new RateLimitConfigError(
      `rateLimitDirective: name ${JSON.stringify(config.name)} is not a GraphQL name`,
    );
  }
  return config;
}

function limited<TContext>(
  resolve: GraphQLFieldResolver<unknown, TContext>,
  coordinate: string,
  rules: readonly RateLimitRule[],
  config: Config<TContext>,
): GraphQLFieldResolver<unknown, TContext> {
  const { store, identify, onStoreError, timeoutMs, onDecision, dryRun } = config;
  return async (source, args, context, info) => {
    const raw = identify(context, info);
    if (raw === undefined || raw === null || raw === '') throw new UnauthenticatedError();
    const identity = String(raw);
    const started = performance.now();
    let decision: Decision;
    try {
      decision = await withTimeout(store.hit(identity, rules), timeoutMs);
    } catch (caught) {
      const error = caught instanceof Error ? caught : new Error(String(caught));
      const allowed = onStoreError === 'allow';
      report(onDecision, context, {
        field: coordinate,
        identity,
        rules,
        rule: rules[0] as RateLimitRule,
        allowed,
        remaining: undefined,
        resetMs: undefined,
        retryAfter: 0,
        latencyMs: performance.now() - started,
        error,
      });
      if (allowed) return resolve(source, args, context, info);
      throw new RateLimitUnavailableError(error);
    }
    const latencyMs = performance.now() - started;
    const index = reportedLimit(decision);
    const rule = rules[index] as RateLimitRule;
    const state = decision.limits[index];
    const retryAfter = decision.allowed
      ? 0
      : Math.max(1, Math.ceil((state?.retryAfterMs ?? 0) / 1000));
    report(onDecision, context, {
      field: coordinate,
      identity,
      rules,
      rule,
      allowed: decision.allowed,
      remaining: state?.remaining,
      resetMs: state?.resetMs,
      retryAfter,
      latencyMs,
      decision,
      dryRun: dryRun && !decision.allowed,
    });
    if (!decision.allowed && !dryRun) {
      throw new RateLimitedError({
        action: rule.action,
        limit: rule.limit,
        window: rule.windowSeconds,
        retryAfter,
      });
    }
    return resolve(source, args, context, info);
  };
}

/**
 * The limit a decision is reported by: when blocked, the one with the longest wait (waiting
 * that long satisfies every limit); when allowed, the one with the fewest units left.
 */
function reportedLimit(decision: Decision): number {
  let best = 0;
  decision.limits.forEach((state, i) => {
    const current = decision.limits[best] as LimitState;
    const better = decision.allowed
      ? state.remaining < current.remaining
      : state.retryAfterMs > current.retryAfterMs;
    if (better) best = i;
  });
  return best;
}

let warned = false;

function report(
  onDecision: ((event: DecisionEvent) => void) | undefined,
  context: unknown,
  event: DecisionEvent,
): void {
  recordDecision(context, event);
  if (!onDecision) return;
  try {
    onDecision(event);
  } catch (error) {
    if (!warned) {
      warned = true;
      process.emitWarning(`rateLimitDirective: onDecision threw: ${String(error)}`);
    }
  }
}
