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
import type { Decision, RateLimitStore } from './stores/store';
import { withTimeout } from './timeout';

/** Who a hit is counted against; `undefined`, `null` or `''` means nobody (UNAUTHENTICATED). */
export type Identify<TContext> = (
  context: TContext,
  info: GraphQLResolveInfo,
) => string | number | null | undefined;

/** What to do when the store fails or times out. */
export type StoreErrorPolicy = 'deny' | 'allow';

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
}

/** What {@link rateLimitDirective} returns. */
export interface RateLimitDirective {
  /** SDL of the directive and its `RateLimitAlgorithm` enum, to merge into the schema's. */
  readonly typeDefs: string;
  /** Returns a new schema whose rate-limited fields decide before they resolve. */
  readonly transformer: (schema: GraphQLSchema) => GraphQLSchema;
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
        return { ...field, resolve: limited(field.resolve ?? defaultFieldResolver, rules, config) };
      },
    });
  return { typeDefs, transformer };
}

type Config<TContext> = Required<{
  [K in keyof RateLimitDirectiveOptions<TContext>]: NonNullable<
    RateLimitDirectiveOptions<TContext>[K]
  >;
}>;

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
  };
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
  rules: readonly RateLimitRule[],
  config: Config<TContext>,
): GraphQLFieldResolver<unknown, TContext> {
  const { store, identify, onStoreError, timeoutMs } = config;
  return async (source, args, context, info) => {
    const raw = identify(context, info);
    if (raw === undefined || raw === null || raw === '') throw new UnauthenticatedError();
    let decision: Decision;
    try {
      decision = await withTimeout(store.hit(String(raw), rules), timeoutMs);
    } catch (error) {
      if (onStoreError === 'allow') return resolve(source, args, context, info);
      throw new RateLimitUnavailableError(
        error instanceof Error ? error : new Error(String(error)),
      );
    }
    if (!decision.allowed) throw blockedError(rules, decision);
    return resolve(source, args, context, info);
  };
}

/** The error for the limit with the longest wait: waiting that long satisfies every limit. */
function blockedError(rules: readonly RateLimitRule[], decision: Decision): RateLimitedError {
  let worst = 0;
  decision.limits.forEach((state, i) => {
    if (state.retryAfterMs > (decision.limits[worst]?.retryAfterMs ?? 0)) worst = i;
  });
  const rule = rules[worst] as RateLimitRule;
  const retryAfterMs = decision.limits[worst]?.retryAfterMs ?? 0;
  return new RateLimitedError({
    action: rule.action,
    limit: rule.limit,
    window: rule.windowSeconds,
    retryAfter: Math.max(1, Math.ceil(retryAfterMs / 1000)),
  });
}
