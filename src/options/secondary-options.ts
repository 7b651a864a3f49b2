import { ruleProblem, type RateLimitRule } from '../rate-limit-rule';
import { RateLimitConfigError } from '../errors';
import { showValue, valueProblem } from '../show-value';

/*
 * GitHub's secondary limits, as options of the cost budget (`budget.inFlight`, `budget.time`):
 * they count against the budget's identity, are decided with it in one store call before an
 * operation runs and settled with it in one after (src/budget/operation-call.ts).
 */

/** The action of the in-flight counter, in its keys, headers, errors and events. */
export const IN_FLIGHT_ACTION = 'inFlight';
/** The action of the execution time counter, in its keys, headers, errors and events. */
export const TIME_ACTION = 'time';

/** `budget.inFlight`: at most `limit` operations of one identity execute at once. */
export interface InFlightOptions {
  /** Operations of one identity that may execute at once, across every process. */
  readonly limit: number;
  /**
   * Seconds a slot outlives a process that died holding it; renewed while the operation runs.
   * @default 60
   */
  readonly leaseSeconds?: number | undefined;
}

/**
 * `budget.time`: `seconds` of execution time per `window` seconds for one identity. Execution
 * time is measured on the serving process's monotonic clock from the start of execution to the
 * operation's last payload.
 */
export interface ExecutionTimeOptions {
  /** Seconds of execution time per window (a whole number of ms). */
  readonly seconds: number;
  /** Seconds; time restores continuously, `seconds` per `window`. */
  readonly window: number;
  /**
   * Milliseconds an operation reserves when it is admitted: admitted only while that much is
   * left; settled to the time it took when it ends (refunded, or charged more as debt).
   * @default 100
   */
  readonly reserveMs?: number | undefined;
  /** Milliseconds charged on top of its time to an operation aborted or timed out. @default 1000 */
  readonly penaltyMs?: number | undefined;
}

/** The secondary limits of a budget, with every default filled in and every value checked. */
export interface SecondaryConfig {
  /** A CONCURRENCY rule: `limit` slots, `windowSeconds` the lease. */
  readonly inFlight: RateLimitRule | undefined;
  /** `limit` ms per `windowSeconds`, `cost` the ms reserved (see src/stores/operation.ts). */
  readonly time: RateLimitRule | undefined;
  readonly penaltyMs: number;
}

export const SECONDARY_DEFAULTS = { leaseSeconds: 60, reserveMs: 100, penaltyMs: 1000 } as const;

const IN_FLIGHT_KEYS = new Set(['limit', 'leaseSeconds']);
const TIME_KEYS = new Set(['seconds', 'window', 'reserveMs', 'penaltyMs']);

const isObject = (value: unknown): value is object =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const isWholeAtLeast = (value: unknown, min: number): value is number =>
  Number.isSafeInteger(value) && (value as number) >= min;

/**
 * `budget.inFlight` and `budget.time` with their defaults, counting against `by` (the budget's);
 * undefined when neither is there. Throws RateLimitConfigError naming the first bad value.
 */
export function resolveSecondary(
  inFlight: InFlightOptions | undefined,
  time: ExecutionTimeOptions | undefined,
  by: string | undefined,
): SecondaryConfig | undefined {
  if (inFlight === undefined && time === undefined) return undefined;
  const fail = (message: string): never => {
    throw new RateLimitConfigError(`rateLimitDirective: budget.${message}`);
  };
  const known = (name: string, options: object, keys: Set<string>): void => {
    for (const key of Object.keys(options)) {
      if (!keys.has(key)) fail(`${name}.${key} is not an option; use ${[...keys].join(', ')}`);
    }
  };
  let inFlightRule: RateLimitRule | undefined;
  if (inFlight !== undefined) {
    if (!isObject(inFlight)) fail('inFlight must be an object: { limit, leaseSeconds? }');
    known('inFlight', inFlight, IN_FLIGHT_KEYS);
    const leaseSeconds = inFlight.leaseSeconds ?? SECONDARY_DEFAULTS.leaseSeconds;
    const rule = {
      action: IN_FLIGHT_ACTION,
      algorithm: 'CONCURRENCY' as const,
      windowSeconds: leaseSeconds,
      limit: inFlight.limit,
      cost: 1,
      by,
    };
    const problem = ruleProblem(rule);
    if (problem) {
      const name = problem.field === 'windowSeconds' ? 'leaseSeconds' : problem.field;
      fail(`inFlight.${valueProblem(name, problem.value, problem.why)}`);
    }
    inFlightRule = rule;
  }
  let timeRule: RateLimitRule | undefined;
  let penaltyMs: number = SECONDARY_DEFAULTS.penaltyMs;
  if (time !== undefined) {
    if (!isObject(time)) {
      fail('time must be an object: { seconds, window, reserveMs?, penaltyMs? }');
    }
    known('time', time, TIME_KEYS);
    const { seconds, window } = time;
    const limitMs = typeof seconds === 'number' ? seconds * 1000 : NaN;
    if (!isWholeAtLeast(limitMs, 1)) {
      fail(`time.seconds must be a number of seconds > 0 (whole ms), got ${showValue(seconds)}`);
    }
    const reserveMs = time.reserveMs ?? Math.min(SECONDARY_DEFAULTS.reserveMs, limitMs);
    if (!isWholeAtLeast(reserveMs, 0) || reserveMs > limitMs) {
      fail(
        `time.reserveMs must be a whole number of ms from 0 to seconds * 1000, got ${showValue(reserveMs)}`,
      );
    }
    penaltyMs = time.penaltyMs ?? SECONDARY_DEFAULTS.penaltyMs;
    if (!isWholeAtLeast(penaltyMs, 0)) {
      fail(`time.penaltyMs must be a whole number of ms >= 0, got ${showValue(penaltyMs)}`);
    }
    // checked as a window of `limitMs` units; the key reads as a TOKEN_BUCKET's
    const rule = {
      action: TIME_ACTION,
      algorithm: 'TOKEN_BUCKET' as const,
      windowSeconds: window,
      limit: limitMs,
      cost: reserveMs,
      by,
    };
    const problem = ruleProblem({ ...rule, algorithm: 'FIXED_WINDOW', cost: 1 });
    if (problem?.field === 'windowSeconds') {
      fail(`time.${valueProblem('window', problem.value, problem.why)}`);
    }
    timeRule = rule;
  }
  return { inFlight: inFlightRule, time: timeRule, penaltyMs };
}
