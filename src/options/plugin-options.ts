import { RateLimitConfigError } from '../errors';

/** Options only the server plugins read; part of `rateLimitDirective`'s options. */
export interface PluginOptions {
  /**
   * Add the limit state of every action a response touched to its `extensions.rateLimit`
   * (`{ [action]: { limit, remaining, reset } }`, reset in seconds); needs `plugin`. The
   * budget is reported in `extensions.cost` instead.
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

/** {@link PluginOptions} with every default filled in. */
export type ResolvedPluginOptions = { readonly [K in keyof PluginOptions]-?: boolean };

const PLUGIN_DEFAULTS: ResolvedPluginOptions = { exposeLimits: false, status429: false };

/** Fills in the defaults of the plugin options. */
export function resolvePluginOptions(options: PluginOptions): ResolvedPluginOptions {
  for (const key of ['exposeLimits', 'status429'] as const) {
    const value = options[key];
    if (value !== undefined && typeof value !== 'boolean') {
      throw new RateLimitConfigError(
        `rateLimitDirective: ${key} must be a boolean, got ${JSON.stringify(value)}`,
      );
    }
  }
  return {
    exposeLimits: options.exposeLimits ?? PLUGIN_DEFAULTS.exposeLimits,
    status429: options.status429 ?? PLUGIN_DEFAULTS.status429,
  };
}
