import type { GraphQLResolveInfo } from 'graphql';

import { resolveBudget, type BudgetConfig, type BudgetOptions } from './budget-options';
import type { DecisionEvent } from '../decision-events';
import { RateLimitConfigError } from '../errors';
import { showValue } from '../show-value';
import {
  resolvePluginOptions,
  type PluginOptions,
  type ResolvedPluginOptions,
} from './plugin-options';
import type { RateLimitStore } from '../stores/store';

/** What an identity source returns: `undefined`, `null` and `''` mean nobody. */
export type IdentityValue = string | number | null | undefined;

/**
 * Who a hit is counted against: a non-empty string or a finite number, or a Promise of one;
 * `undefined`, `null` or `''` means nobody (UNAUTHENTICATED). Anything else fails the field.
 */
export type Identify<TContext> = (
  context: TContext,
  info: GraphQLResolveInfo,
) => IdentityValue | Promise<IdentityValue>;

/**
 * A named identity source for `@rateLimit(by: "<name>")`: who a hit counts against, from the
 * request and the field's arguments, with the same values as {@link Identify}.
 */
export type IdentitySource<TContext> = (
  context: TContext,
  info: GraphQLResolveInfo,
  args: Record<string, unknown>,
) => IdentityValue | Promise<IdentityValue>;

/** What to do when the store fails or times out. */
export type StoreErrorPolicy = 'deny' | 'allow';

/** Options of `rateLimitDirective`. */
export interface RateLimitDirectiveOptions<TContext = any> extends PluginOptions {
  /** Where counters live: `createRedisStore(...)` or `createMemoryStore()`. */
  readonly store: RateLimitStore;
  /** The identity a hit counts against. @default (context) => context.team?.id */
  readonly identify?: Identify<TContext> | undefined;
  /**
   * Named identity sources that `@rateLimit(by: "<name>")` counts against instead of
   * `identify`, e.g. `{ ip: (ctx) => ctx.ip, global: () => 'all' }`. @default {}
   */
  readonly identities?: Readonly<Record<string, IdentitySource<TContext>>> | undefined;
  /**
   * Decides hits while `store` fails or times out, e.g. `createMemoryStore()`: limits then hold
   * per process through an outage. `onStoreError` applies only when the fallback fails too.
   * @default undefined
   */
  readonly fallbackStore?: RateLimitStore | undefined;
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
   * An operation cost budget per identity, which the plugins (`plugin`, `envelopPlugin`)
   * enforce: each query or mutation is priced from its shape (`@cost`, `@listSize`) before it
   * runs, takes that many points, or is refused (RATE_LIMITED with `action: "budget"`, or
   * COST_ESTIMATED_TOO_EXPENSIVE), and gets back afterwards what its result did not use. E.g.
   * `{ limit: 1000, window: 60 }`: 1,000 points a minute, refilled continuously.
   * @default undefined: no budget
   */
  readonly budget?: BudgetOptions | undefined;
}

/** The options with every default filled in and every value checked. */
export interface Config<TContext = any> {
  readonly store: RateLimitStore;
  readonly fallbackStore: RateLimitStore | undefined;
  readonly identify: Identify<TContext>;
  readonly identities: ReadonlyMap<string, IdentitySource<TContext>>;
  readonly onStoreError: StoreErrorPolicy;
  readonly timeoutMs: number;
  readonly name: string;
  readonly onDecision: ((event: DecisionEvent) => void) | undefined;
  readonly dryRun: boolean;
  readonly plugin: ResolvedPluginOptions;
  readonly budget: BudgetConfig | undefined;
}

const DEFAULTS = {
  identify: (context: any): string | number | undefined => context?.team?.id,
  onStoreError: 'deny',
  timeoutMs: 250,
  name: 'rateLimit',
  dryRun: false,
} as const;

/** Fills in the defaults; throws RateLimitConfigError naming the first bad option. */
export function resolveOptions<TContext>(
  options: RateLimitDirectiveOptions<TContext>,
): Config<TContext> {
  if (!options || typeof options.store?.hit !== 'function') {
    throw new RateLimitConfigError('rateLimitDirective: `store` must be a RateLimitStore');
  }
  const identities = identitySources(options.identities);
  const config: Config<TContext> = {
    store: options.store,
    fallbackStore: options.fallbackStore,
    identify: options.identify ?? DEFAULTS.identify,
    identities,
    onStoreError: options.onStoreError ?? DEFAULTS.onStoreError,
    timeoutMs: options.timeoutMs ?? DEFAULTS.timeoutMs,
    name: options.name ?? DEFAULTS.name,
    onDecision: options.onDecision,
    dryRun: options.dryRun ?? DEFAULTS.dryRun,
    plugin: resolvePluginOptions(options),
    budget: resolveBudget(options.budget, new Set(identities.keys())),
  };
  const fail = (message: string): never => {
    throw new RateLimitConfigError(`rateLimitDirective: ${message}`);
  };
  if (config.fallbackStore !== undefined && typeof config.fallbackStore?.hit !== 'function') {
    fail('`fallbackStore` must be a RateLimitStore');
  }
  if (config.onDecision !== undefined && typeof config.onDecision !== 'function') {
    fail('`onDecision` must be a function');
  }
  if (typeof config.identify !== 'function') fail('`identify` must be a function');
  if (config.onStoreError !== 'deny' && config.onStoreError !== 'allow') {
    fail(`onStoreError must be 'deny' or 'allow', got ${showValue(config.onStoreError)}`);
  }
  if (!Number.isFinite(config.timeoutMs) || config.timeoutMs <= 0) {
    fail(`timeoutMs must be a positive number of milliseconds, got ${showValue(config.timeoutMs)}`);
  }
  if (typeof config.dryRun !== 'boolean') {
    fail(`dryRun must be a boolean, got ${showValue(config.dryRun)}`);
  }
  if (!/^[_A-Za-z][_0-9A-Za-z]*$/.test(config.name)) {
    fail(`name ${JSON.stringify(config.name)} is not a GraphQL name`);
  }
  return config;
}

function identitySources<TContext>(
  identities: RateLimitDirectiveOptions<TContext>['identities'],
): ReadonlyMap<string, IdentitySource<TContext>> {
  if (identities === undefined) return new Map();
  if (typeof identities !== 'object' || identities === null || Array.isArray(identities)) {
    throw new RateLimitConfigError(
      'rateLimitDirective: `identities` must be an object of functions',
    );
  }
  const sources = new Map<string, IdentitySource<TContext>>();
  for (const [name, source] of Object.entries(identities)) {
    if (name === '' || name.startsWith('args.')) {
      throw new RateLimitConfigError(
        `rateLimitDirective: identities.${name || '""'}: a name must be non-empty and not start with "args."`,
      );
    }
    if (typeof source !== 'function') {
      throw new RateLimitConfigError(`rateLimitDirective: identities.${name} must be a function`);
    }
    sources.set(name, source);
  }
  return sources;
}
