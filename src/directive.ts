import {
  defaultFieldResolver,
  type GraphQLFieldResolver,
  type GraphQLResolveInfo,
  type GraphQLSchema,
} from 'graphql';
import { MapperKind, mapSchema } from '@graphql-tools/utils';

import type { RateLimitRule } from './algorithms';
import { createControls, createRuleRegistry, type RateLimitControls } from './controls';
import { createReporter, reportedLimit, type DecidedBy, type Reporter } from './decisions';
import {
  RateLimitCostExceededError,
  RateLimitedError,
  RateLimitUnavailableError,
  StoreTimeoutError,
} from './errors';
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
export interface RateLimitDirective extends RateLimitControls {
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
  const registry = createRuleRegistry();
  const transformer = (schema: GraphQLSchema): GraphQLSchema =>
    mapSchema(schema, {
      [MapperKind.OBJECT_FIELD]: (field, fieldName, typeName) => {
        const rules = rulesFor(schema, typeName, fieldName, field, name, identityNames);
        if (rules.length === 0) return field;
        registry.add(rules);
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
  const { peek, reset } = createControls(config, registry);
  return { typeDefs, transformer, plugin: rateLimitPlugin(config), peek, reset };
}

function limited<TContext>(
  resolve: GraphQLFieldResolver<unknown, TContext>,
  coordinate: string,
  rules: readonly FieldRule[],
  config: Config<TContext>,
  report: Reporter,
): GraphQLFieldResolver<unknown, TContext> {
  const { onStoreError, dryRun } = config;
  const decide = decider(config);
  const who = identitiesOf(rules, config);
  const costs = costsOf(rules);
  return async (source, args, context, info) => {
    const identities = await who(context, info, args);
    const hitCosts = costs?.(args);
    const identity = typeof identities === 'string' ? identities : (identities[0] as string);
    const started = performance.now();
    let outcome: Outcome;
    try {
      outcome = await decide(identities, rules, hitCosts);
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
        decidedBy: 'store',
      });
      if (allowed) return resolve(source, args, context, info);
      throw new RateLimitUnavailableError(error);
    }
    const latencyMs = performance.now() - started;
    const { decision, decidedBy, error } = outcome;
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
      decidedBy,
      error,
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

/** A decision, who made it, and the store's failure when the fallback made it. */
interface Outcome {
  readonly decision: Decision;
  readonly decidedBy: DecidedBy;
  readonly error?: Error | undefined;
}

/**
 * Decides a hit on the store, bounded by `timeoutMs`; when the store fails or times out and a
 * `fallbackStore` is set, on the fallback. Rejects with the store's error when nothing decided.
 */
function decider(
  config: Config,
): (
  identity: string | readonly string[],
  rules: readonly RateLimitRule[],
  costs: readonly number[] | undefined,
) => Promise<Outcome> {
  const { store, fallbackStore, timeoutMs } = config;
  const timedOut = (): Error => new StoreTimeoutError(timeoutMs);
  return async (identity, rules, costs) => {
    try {
      const decision = await withTimeout(store.hit(identity, rules, costs), timeoutMs, timedOut);
      return { decision, decidedBy: decision.cached ? 'cache' : 'store' };
    } catch (caught) {
      const error = caught instanceof Error ? caught : new Error(String(caught));
      if (!fallbackStore) throw error;
      try {
        const decision = await withTimeout(
          fallbackStore.hit(identity, rules, costs),
          timeoutMs,
          timedOut,
        );
        return { decision, decidedBy: 'fallback', error };
      } catch {
        throw error;
      }
    }
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
