import {
  defaultFieldResolver,
  type GraphQLFieldResolver,
  type GraphQLResolveInfo,
  type GraphQLSchema,
} from 'graphql';
import { MapperKind, mapSchema } from '@graphql-tools/utils';

import type { RateLimitRule } from './algorithms';
import { createReporter, reportedLimit, type Reporter } from './decisions';
import {
  RateLimitCostExceededError,
  RateLimitedError,
  RateLimitUnavailableError,
  StoreTimeoutError,
} from './errors';
import { rateLimitEnvelopPlugin, type RateLimitEnvelopPlugin } from './envelop-plugin';
import { identityFrom } from './identity';
import {
  resolveOptions,
  type Config,
  type IdentitySource,
  type RateLimitDirectiveOptions,
} from './options';
import { rateLimitPlugin, type RateLimitPlugin } from './plugin';
import { ARGUMENT_SOURCE, rulesFor, type FieldRule } from './rules';
import type { Decision } from './stores/store';
import { withTimeout } from './timeout';
import { LIMITED } from './transformed';
import { directiveTypeDefs } from './type-defs';

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
  /** The same for GraphQL Yoga and other envelop-based servers (headers need Yoga's HTTP layer). */
  readonly envelopPlugin: RateLimitEnvelopPlugin;
}

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
  const typeDefs = directiveTypeDefs(name);
  const report = createReporter(config.onDecision);
  const identityNames = new Set(config.identities.keys());
  const transformer = (schema: GraphQLSchema): GraphQLSchema =>
    mapSchema(schema, {
      [MapperKind.OBJECT_FIELD]: (field, fieldName, typeName) => {
        const rules = rulesFor(schema, typeName, fieldName, field, name, identityNames);
        if (rules.length === 0) return field;
        return {
          ...field,
          resolve: limited(
            field.resolve ?? defaultFieldResolver,
            `${typeName}.${fieldName}`,
            rules,
            config,
            report,
          ),
          extensions: { ...field.extensions, [LIMITED]: true },
        };
      },
    });
  const envelopPlugin = rateLimitEnvelopPlugin(config);
  return { typeDefs, transformer, plugin: rateLimitPlugin(config), envelopPlugin };
}

function limited<TContext>(
  resolve: GraphQLFieldResolver<unknown, TContext>,
  coordinate: string,
  rules: readonly FieldRule[],
  config: Config<TContext>,
  report: Reporter,
): GraphQLFieldResolver<unknown, TContext> {
  const { store, onStoreError, timeoutMs, dryRun } = config;
  const who = identitiesOf(rules, config);
  const costs = costsOf(rules);
  return async (source, args, context, info) => {
    const identities = await who(context, info, args);
    const hitCosts = costs?.(args);
    const identity = typeof identities === 'string' ? identities : (identities[0] as string);
    const started = performance.now();
    let decision: Decision;
    try {
      decision = await withTimeout(
        store.hit(identities, rules, hitCosts),
        timeoutMs,
        () => new StoreTimeoutError(timeoutMs),
      );
    } catch (caught) {
      const error = caught instanceof Error ? caught : new Error(String(caught));
      const allowed = onStoreError === 'allow';
      report(context, {
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
    const ruleIdentity =
      typeof identities === 'string' ? identities : (identities[index] as string);
    const retryAfter = decision.allowed
      ? 0
      : Math.max(1, Math.ceil((state?.retryAfterMs ?? 0) / 1000));
    report(context, {
      field: coordinate,
      identity: ruleIdentity,
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

type Who<TContext> = (
  context: TContext,
  info: GraphQLResolveInfo,
  args: Record<string, unknown>,
) => Promise<string | readonly string[]>;

/**
 * Who each of `rules` counts against, computed once per source per hit: one string when every
 * rule has the same source (the common case: no array, one call), else one identity per rule.
 */
function identitiesOf<TContext>(
  rules: readonly FieldRule[],
  config: Config<TContext>,
): Who<TContext> {
  const sources = [...new Set(rules.map((r) => r.by))];
  const sourceOf = rules.map((r) => sources.indexOf(r.by));
  const read = sources.map((by) => sourceReader(by, config));
  if (read.length === 1) {
    const only = read[0] as SourceReader<TContext>;
    return async (context, info, args) => only(context, info, args);
  }
  return async (context, info, args) => {
    const found: string[] = [];
    for (const r of read) found.push(await r(context, info, args));
    return sourceOf.map((j) => found[j] as string);
  };
}

type SourceReader<TContext> = (
  context: TContext,
  info: GraphQLResolveInfo,
  args: Record<string, unknown>,
) => string | Promise<string>;

function sourceReader<TContext>(
  by: string | undefined,
  config: Config<TContext>,
): SourceReader<TContext> {
  if (by === undefined) {
    const { identify } = config;
    return (context, info) => identityFrom(() => identify(context, info), 'identify');
  }
  if (by.startsWith(ARGUMENT_SOURCE)) {
    const name = by.slice(ARGUMENT_SOURCE.length);
    return (_context, _info, args) => identityFrom(() => args[name], `argument ${name}`);
  }
  const source = config.identities.get(by) as IdentitySource<TContext>;
  const what = `identities.${by}`;
  return (context, info, args) => identityFrom(() => source(context, info, args), what);
}

/**
 * Units per rule for a hit, when any rule takes its cost from an argument: `cost` times the
 * argument's value (at least 1; `null` counts as 1). Throws RATE_LIMIT_COST_EXCEEDED for a hit
 * that no wait could let through, before anything is counted.
 */
function costsOf(
  rules: readonly FieldRule[],
): ((args: Record<string, unknown>) => number[]) | undefined {
  if (!rules.some((r) => r.costArg !== undefined)) return undefined;
  return (args) =>
    rules.map((rule) => {
      const value = rule.costArg === undefined ? 1 : args[rule.costArg];
      const cost = rule.cost * (typeof value === 'number' && value > 1 ? value : 1);
      if (cost > rule.limit) {
        throw new RateLimitCostExceededError({ action: rule.action, limit: rule.limit, cost });
      }
      return cost;
    });
}
