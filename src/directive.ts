import { defaultFieldResolver, type GraphQLFieldResolver, type GraphQLSchema } from 'graphql';
import { MapperKind, mapSchema } from '@graphql-tools/utils';

import type { RateLimitRule } from './algorithms';
import { createReporter, reportedLimit, type Reporter } from './decisions';
import { RateLimitedError, RateLimitUnavailableError, StoreTimeoutError } from './errors';
import { identityFrom } from './identity';
import { resolveOptions, type Config, type RateLimitDirectiveOptions } from './options';
import { rateLimitPlugin, type RateLimitPlugin } from './plugin';
import { rulesFor } from './rules';
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
            report,
          ),
          extensions: { ...field.extensions, [LIMITED]: true },
        };
      },
    });
  return { typeDefs, transformer, plugin: rateLimitPlugin(config) };
}

function limited<TContext>(
  resolve: GraphQLFieldResolver<unknown, TContext>,
  coordinate: string,
  rules: readonly RateLimitRule[],
  config: Config<TContext>,
  report: Reporter,
): GraphQLFieldResolver<unknown, TContext> {
  const { store, identify, onStoreError, timeoutMs, dryRun } = config;
  return async (source, args, context, info) => {
    const given = identityFrom(() => identify(context, info), 'identify');
    const identity = typeof given === 'string' ? given : await given;
    const started = performance.now();
    let decision: Decision;
    try {
      decision = await withTimeout(
        store.hit(identity, rules),
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
    const retryAfter = decision.allowed
      ? 0
      : Math.max(1, Math.ceil((state?.retryAfterMs ?? 0) / 1000));
    report(context, {
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
