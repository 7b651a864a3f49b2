/**
 * The algorithms a `@rateLimit` directive can name, in the order the SDL enum lists them. The
 * type, the SDL enum and the script's algorithm ids are all derived from this one list.
 */
export const ALGORITHMS = ['FIXED_WINDOW', 'SLIDING_WINDOW', 'TOKEN_BUCKET'] as const;

/** One of {@link ALGORITHMS}. */
export type RateLimitAlgorithm = (typeof ALGORITHMS)[number];

/** One validated `@rateLimit` on one field: what is counted, how much per hit, and the bound. */
export interface RateLimitRule {
  /** Counter name; fields that share it share one counter per identity. */
  readonly action: string;
  readonly algorithm: RateLimitAlgorithm;
  readonly windowSeconds: number;
  readonly limit: number;
  /** Units one hit takes. @default 1 */
  readonly cost: number;
  /**
   * Where the identity comes from: undefined for `identify`, a name of `identities`, or
   * `args.<argument>`. Part of the counter's key, so sources never share a counter.
   * @default undefined
   */
  readonly by?: string | undefined;
}

/** Whether `value` names one of {@link ALGORITHMS}. */
export function isAlgorithm(value: unknown): value is RateLimitAlgorithm {
  return (ALGORITHMS as readonly unknown[]).includes(value);
}
