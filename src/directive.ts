import {
  defaultFieldResolver,
  type GraphQLFieldResolver,
  type GraphQLResolveInfo,
  type GraphQLSchema,
} from 'graphql';
import { MapperKind, mapSchema } from '@graphql-tools/utils';

import type { RateLimitRule } from './rate-limit-rule';
import { createBudget, type Budget } from './budget/budget';
import { warnBudgetUnenforced } from './budget/unenforced';
import { checkCostDirectives } from './cost/check';
import {
  createControls,
  createRuleRegistry,
  type RateLimitControls,
} from './decide/operator-controls';
import { abortSignalOf, holdLease } from './decide/leases';
import { decidedHit, failedHit } from './decide/decided-hit';
import { createDecider, type Decider, type Outcome } from './decide/decider';
import { createReporter, reportedLimit, type Reporter } from './decision-events';
import { rateLimitEnvelopPlugin, type RateLimitEnvelopPlugin } from './plugins/envelop';
import { RateLimitConfigError } from './errors';
import { costsOf } from './decide/hit-costs';
import {
  resolveOptions,
  type Config,
  type RateLimitDirectiveOptions,
} from './options/directive-options';
import { rateLimitPlugin, type RateLimitPlugin } from './plugins/apollo';
import { directivesOn, rulesFor, type FieldRule } from './schema/field-rules';
import { createIdentityWatch, type IdentityWatch } from './identities/identity-watch';
import { identitiesOf } from './identities/identity-sources';
import { holdLive, limitedStart } from './decide/subscription-start';
import type { Lease, RateLimitStore } from './stores/store';
import { LIMITED, limitedBy, resolvesThrough } from './schema/transform-mark';
import { directiveTypeDefs } from './schema/type-defs';

/** What {@link rateLimitDirective} returns. */
export interface RateLimitDirective extends RateLimitControls {
  /**
   * SDL of the directive, its `RateLimitAlgorithm` enum, and the cost spec's `@cost` and
   * `@listSize`, to merge into the schema's.
   */
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
  const decider = createDecider(config);
  const identityNames = new Set(config.identities.keys());
  const registry = createRuleRegistry();
  const watch = createIdentityWatch();
  if (config.budget) registry.add([config.budget.rule]);
  // peek and reset reach an identity's in-flight slots (its time is not a counter peek reads)
  const inFlight = config.budget?.secondary?.inFlight;
  if (inFlight) registry.add([inFlight]);
  const budget = config.budget && createBudget(config, config.budget, report, decider);
  // what this directive marks the fields it wraps with: a second pass of it wraps nothing again
  const mark = Object.freeze({ name });
  const transformer = (schema: GraphQLSchema): GraphQLSchema => {
    const result = mapSchema(schema, {
      [MapperKind.OBJECT_FIELD]: (field, fieldName, typeName) => {
        const wrapped = limitedBy(field, name);
        if (wrapped === mark) return field;
        const rules = rulesFor(schema, typeName, fieldName, field, name, identityNames);
        if (rules.length === 0) return field;
        if (wrapped !== undefined) {
          throw new RateLimitConfigError(
            `${typeName}.${fieldName}: @${name} was already applied by the transformer of ` +
              `another rateLimitDirective() named "${name}"; both would count every hit. ` +
              'Apply one of them, or give each its own directive name',
          );
        }
        const coordinate = `${typeName}.${fieldName}`;
        registry.add(rules, coordinate);
        // recorded, so that every host can tell it is still this field's resolver
        // on a Subscription field a hit is a start: `subscribe` is decided, each event's
        // `resolve` is not (graphql-js' default subscribe reads the root value, as ours does),
        // and its CONCURRENCY slots are held while the subscription is live, not while it starts
        const starts = typeName === schema.getSubscriptionType()?.name;
        const hold = starts ? holdLive : holdLease;
        const decided = (run: GraphQLFieldResolver<unknown, TContext>) =>
          resolvesThrough(
            limited(run, coordinate, rules, config, report, decider, watch, budget, hold),
            run,
            mark,
          );
        const decision = starts
          ? { subscribe: started(decided(field.subscribe ?? defaultFieldResolver)) }
          : { resolve: decided(field.resolve ?? defaultFieldResolver) };
        return {
          ...field,
          ...decision,
          extensions: {
            ...field.extensions,
            [LIMITED]: { ...(field.extensions?.[LIMITED] as object | undefined), [name]: mark },
          },
        };
      },
      [MapperKind.INTERFACE_FIELD]: (field, fieldName, typeName) => {
        // an interface's fields never resolve: a limit there would limit nothing
        const coordinate = `${typeName}.${fieldName}`;
        const type = schema.getType(typeName);
        const on =
          directivesOn(schema, field, name, coordinate).length > 0 ||
          (type !== undefined && directivesOn(schema, type, name, coordinate).length > 0);
        if (on) {
          throw new RateLimitConfigError(
            `${coordinate}: @${name} on an interface limits nothing (its fields never resolve); ` +
              'put it on the fields of the object types that implement it',
          );
        }
        return field;
      },
    });
    // a bad @cost or @listSize fails here, naming Type.field, not on the first request priced
    // (after the directive's own checks, which name a bad @rateLimit more precisely)
    checkCostDirectives(result);
    return result;
  };
  const { peek, reset, rules } = createControls(config, registry, decider);
  const plugin = rateLimitPlugin(config, budget);
  const envelopPlugin = rateLimitEnvelopPlugin(config, budget);
  return { typeDefs, transformer, plugin, envelopPlugin, peek, reset, rules };
}

function limited<TContext>(
  resolve: GraphQLFieldResolver<unknown, TContext>,
  coordinate: string,
  rules: readonly FieldRule[],
  config: Config<TContext>,
  report: Reporter,
  decider: Decider,
  watch: IdentityWatch,
  budget: Budget | undefined,
  hold: (
    run: () => unknown,
    lease: Lease,
    store: RateLimitStore,
    decider: Decider,
    signal: AbortSignal | undefined,
  ) => unknown,
): GraphQLFieldResolver<unknown, TContext> {
  const { onStoreError, dryRun } = config;
  const who = identitiesOf(rules, config, watch);
  const costs = costsOf(rules);
  const answer = (
    source: unknown,
    args: Record<string, unknown>,
    context: TContext,
    info: GraphQLResolveInfo,
    identities: string | readonly string[],
    hitCosts: readonly number[] | undefined,
    outcome: Outcome,
    latencyMs: number,
  ): unknown => {
    const index = reportedLimit(outcome.decision);
    const rule = rules[index] as RateLimitRule;
    const subject = {
      field: coordinate,
      identity: typeof identities === 'string' ? identities : (identities[index] as string),
      rules,
      rule,
      cost: hitCosts?.[index] ?? rule.cost,
    };
    const { event, refusal } = decidedHit(subject, outcome, index, latencyMs, dryRun);
    report(context, event);
    if (refusal) throw refusal;
    const { lease } = outcome.decision;
    if (lease === undefined) return resolve(source, args, context, info);
    // the slots of its CONCURRENCY limits are held while the call runs (src/decide/leases.ts), or
    // while the subscription it starts is live (src/decide/subscription-start.ts)
    const run = () => resolve(source, args, context, info);
    return hold(run, lease, outcome.store, decider, abortSignalOf(context));
  };

  const failed = (
    source: unknown,
    args: Record<string, unknown>,
    context: TContext,
    info: GraphQLResolveInfo,
    identities: string | readonly string[],
    started: number,
    caught: unknown,
  ): unknown => {
    const identity = typeof identities === 'string' ? identities : (identities[0] as string);
    const subject = { field: coordinate, identity, rules, rule: rules[0] as RateLimitRule };
    const { event, refusal } = failedHit(subject, onStoreError, started, caught);
    report(context, event);
    if (refusal) throw refusal;
    return resolve(source, args, context, info);
  };

  const decide = (
    source: unknown,
    args: Record<string, unknown>,
    context: TContext,
    info: GraphQLResolveInfo,
    identities: string | readonly string[],
  ): Promise<unknown> => {
    const hitCosts = costs?.(args);
    const started = performance.now();
    return decider
      .decide((on) => on.hit(identities, rules, hitCosts))
      .then(
        (outcome) => {
          const latencyMs = performance.now() - started;
          return answer(source, args, context, info, identities, hitCosts, outcome, latencyMs);
        },
        (caught: unknown) => failed(source, args, context, info, identities, started, caught),
      );
  };

  // promise chains, not an async function: this runs once per hit, and each await costs a turn
  return (source, args, context, info) => {
    // a budget is applied by the server plugins alone: one that none brings operations to is inert
    if (budget && !budget.enforced()) warnBudgetUnenforced();
    try {
      const found = who(context, info, args);
      if (typeof found === 'string' || Array.isArray(found)) {
        return decide(source, args, context, info, found as string | readonly string[]);
      }
      return Promise.resolve(found).then((identities) =>
        decide(source, args, context, info, identities),
      );
    } catch (error) {
      // as an async function would: the resolver rejects with what was thrown, as it was thrown
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors
      return Promise.reject(error);
    }
  };
}

/** A start of a subscription behind its decision, recorded as running that decision. */
function started<TContext>(
  decided: GraphQLFieldResolver<unknown, TContext>,
): GraphQLFieldResolver<unknown, TContext> {
  return resolvesThrough(limitedStart(decided), decided);
}
