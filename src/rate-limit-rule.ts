import { RateLimitConfigError } from './errors';
import { showValue, valueProblem } from './show-value';

/**
 * The algorithms a `@rateLimit` directive can name, in the order the SDL enum lists them. The
 * type, the SDL enum and the script's algorithm ids are all derived from this one list.
 */
export const ALGORITHMS = [
  'FIXED_WINDOW',
  'SLIDING_WINDOW',
  'TOKEN_BUCKET',
  'CONCURRENCY',
] as const;

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

/**
 * The arguments of one `@rateLimit`, as SDL writes them: what a code-first schema (graphql-js
 * `extensions`, Pothos' directives plugin) and NestJS' `@RateLimit` take.
 */
export interface RateLimitArgs {
  /** The counter's name; fields with the same action share it. */
  readonly action: string;
  /** The window, in seconds. */
  readonly window: number;
  /** Units allowed per window. */
  readonly limit: number;
  /** @default 'FIXED_WINDOW' */
  readonly algorithm?: RateLimitAlgorithm | undefined;
  /** Units one hit takes. @default 1 */
  readonly cost?: number | undefined;
  /** Whom to count: an `identities` name or `args.<argument>`; by default, `identify`. */
  readonly by?: string | undefined;
  /** An `Int` argument of the field that multiplies `cost`. */
  readonly costArg?: string | undefined;
}

/**
 * Whether `rule` bounds calls in flight (CONCURRENCY: `limit` slots, each held by a lease of
 * `windowSeconds` that the library renews while its call runs) rather than hits over time.
 */
export const isConcurrency = (rule: RateLimitRule): boolean => rule.algorithm === 'CONCURRENCY';

/** Whether `value` names one of {@link ALGORITHMS}. */
export function isAlgorithm(value: unknown): value is RateLimitAlgorithm {
  return (ALGORITHMS as readonly unknown[]).includes(value);
}

/**
 * The most units a SLIDING_WINDOW limit may hold. Its log keeps one sorted-set member per unit
 * (about 130 B each), and a hit's script time grows with the units it adds: a hit of cost 10,000
 * on an empty log runs about 27 ms on a 2-core machine (docs/directive.md "Algorithms"). Above this a single
 * hit could hold Redis for longer than any other client should wait.
 */
export const MAX_SLIDING_WINDOW_LIMIT = 10_000;

/** The fastest TOKEN_BUCKET refill: the server's clock counts whole microseconds. */
export const MAX_TOKENS_PER_SECOND = 1_000_000;

/**
 * The largest TOKEN_BUCKET limit: the largest whose square is below 2^53, which keeps the exact
 * time arithmetic of `lua/hit.lua` in integers that a double holds exactly.
 */
export const MAX_BUCKET_LIMIT = 94_906_265;

/**
 * The longest window, in seconds: 366 days. Every algorithm's arithmetic in `lua/hit.lua` stays
 * exact in a Lua number well within this (the clock in microseconds, about 1.8e15, plus a window
 * of 3.2e13 us, is far below 2^53), and every TTL it sets is a valid PEXPIRE. A longer window
 * would not be a rate limit but a quota, which belongs in a database.
 */
export const MAX_WINDOW_SECONDS = 31_622_400;

/** What is wrong with one value of a rule. */
export interface RuleProblem {
  /** The rule's field; the directive's argument has the same name, but `window`. */
  readonly field: keyof RateLimitRule;
  readonly value: unknown;
  /** Reads after the value: `must be a whole number >= 1`. */
  readonly why: string;
}

/**
 * The first problem of `rule`, or undefined when a store can count it. The one check of a rule's
 * values, shared by schema build (src/schema/field-rules.ts) and the stores, which also take rules directly.
 */
export function ruleProblem(
  rule: Partial<Record<keyof RateLimitRule, unknown>>,
): RuleProblem | undefined {
  const { action, algorithm, windowSeconds, limit, cost } = rule;
  const problem = (field: keyof RateLimitRule, value: unknown, why: string): RuleProblem => ({
    field,
    value,
    why,
  });
  if (typeof action !== 'string' || action.length === 0) {
    return problem('action', action, 'must be a non-empty string');
  }
  if (!isPositiveInt(windowSeconds)) {
    return problem('windowSeconds', windowSeconds, 'must be a whole number of seconds >= 1');
  }
  if (windowSeconds > MAX_WINDOW_SECONDS) {
    return problem(
      'windowSeconds',
      windowSeconds,
      `exceeds ${MAX_WINDOW_SECONDS} seconds (366 days), the longest window a limit may have`,
    );
  }
  if (!isPositiveInt(limit)) return problem('limit', limit, 'must be a whole number >= 1');
  if (!isPositiveInt(cost)) return problem('cost', cost, 'must be a whole number >= 1');
  if (cost > limit) return problem('cost', cost, `exceeds limit ${limit}`);
  if (!isAlgorithm(algorithm)) {
    return problem('algorithm', algorithm, `must be one of ${ALGORITHMS.join(', ')}`);
  }
  if (algorithm === 'SLIDING_WINDOW' && limit > MAX_SLIDING_WINDOW_LIMIT) {
    return problem(
      'limit',
      limit,
      `exceeds ${MAX_SLIDING_WINDOW_LIMIT}, the most units SLIDING_WINDOW logs`,
    );
  }
  if (algorithm === 'TOKEN_BUCKET' && limit > windowSeconds * MAX_TOKENS_PER_SECOND) {
    return problem(
      'limit',
      limit,
      `refills over ${MAX_TOKENS_PER_SECOND} tokens per second, the most TOKEN_BUCKET can count`,
    );
  }
  if (algorithm === 'TOKEN_BUCKET' && limit > MAX_BUCKET_LIMIT) {
    return problem(
      'limit',
      limit,
      `exceeds ${MAX_BUCKET_LIMIT}, the most TOKEN_BUCKET counts exactly`,
    );
  }
  return undefined;
}

/** Rule objects a store already found usable: a directive's rules are checked once, not per hit. */
const checked = new WeakSet<object>();

/**
 * Why `rules` cannot be counted, or undefined when they can: for the stores, whose `hit` may be
 * called with rules no directive checked. Each rule object is checked once, then remembered.
 */
export function rulesError(rules: readonly RateLimitRule[]): RateLimitConfigError | undefined {
  if (!Array.isArray(rules)) {
    return new RateLimitConfigError(`hit: rules must be an array, got ${typeof rules}`);
  }
  for (const rule of rules as unknown[]) {
    if (checked.has(rule as object)) continue;
    if (typeof rule !== 'object' || rule === null) {
      return new RateLimitConfigError(`hit: a rule must be an object, got ${String(rule)}`);
    }
    const problem = ruleProblem(rule);
    if (problem) {
      const { field, value, why } = problem;
      return new RateLimitConfigError(
        `hit: the rule of action ${showValue((rule as RateLimitRule).action)}: ` +
          valueProblem(field, value, why),
      );
    }
    checked.add(rule);
  }
  return undefined;
}

function isPositiveInt(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 1;
}
