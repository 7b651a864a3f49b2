import { ruleProblem, type RateLimitAlgorithm, type RateLimitRule } from '../rate-limit-rule';
import { COST_DEFAULTS } from '../cost/estimate';
import { RateLimitConfigError } from '../errors';
import { showValue, valueProblem } from '../show-value';
import { ARGUMENT_SOURCE } from '../schema/field-rules';
import {
  resolveSecondary,
  type ExecutionTimeOptions,
  type InFlightOptions,
  type SecondaryConfig,
} from './secondary-options';

/** The action of a budget's counter, in its keys, headers, errors and decision events. */
export const BUDGET_ACTION = 'budget';

/**
 * An operation cost budget per identity: `rateLimitDirective`'s `budget` option. Each query or
 * mutation is priced from its shape before it runs (`@cost`, `@listSize`), that many points are
 * taken from its caller's budget, and what its result did not use is refunded afterwards.
 */
export interface BudgetOptions {
  /** Points per window: the most one identity may spend in `window` seconds. */
  readonly limit: number;
  /** Seconds. */
  readonly window: number;
  /** How the points come back. @default 'TOKEN_BUCKET' (limit/window points per second) */
  readonly algorithm?: RateLimitAlgorithm | undefined;
  /**
   * A name of `identities` whose source the budget counts against, called with the context
   * (no field, so `info` is undefined and `args` empty). @default undefined: `identify`
   */
  readonly by?: string | undefined;
  /**
   * The most one operation may be estimated at; above it, or above `limit`, the operation is
   * refused with COST_ESTIMATED_TOO_EXPENSIVE and nothing is taken. @default limit
   */
  readonly maxCost?: number | undefined;
  /** The size of a list no `@listSize` bounds (Apollo Router's `list_size`). @default 10 */
  readonly listSize?: number | undefined;
  /**
   * GitHub's secondary limit on operations in flight: at most `limit` operations of one
   * identity execute at once, across processes (docs/secondary-limits.md). @default undefined
   */
  readonly inFlight?: InFlightOptions | undefined;
  /**
   * GitHub's secondary limit on execution time: `seconds` of it per `window` for one identity
   * (docs/secondary-limits.md). @default undefined
   */
  readonly time?: ExecutionTimeOptions | undefined;
}

/** A budget with every default filled in and every value checked. */
export interface BudgetConfig {
  /** The budget's counter: action {@link BUDGET_ACTION}, cost 1 (a take names its units). */
  readonly rule: RateLimitRule;
  /** The most an operation may be estimated at: the smaller of `maxCost` and `limit`. */
  readonly ceiling: number;
  /** `maxCost` as given, for the refusal's extensions. */
  readonly maxCost: number | undefined;
  readonly listSize: number;
  /** `inFlight` and `time`, when either is there: decided with the budget in one store call. */
  readonly secondary: SecondaryConfig | undefined;
}

const KEYS = new Set([
  'limit',
  'window',
  'algorithm',
  'by',
  'maxCost',
  'listSize',
  'inFlight',
  'time',
]);

/**
 * `budget` with its defaults, or undefined when there is none; throws RateLimitConfigError naming
 * the first bad value. `by` must name one of `identityNames`: an operation has no arguments, so
 * `args.<name>` is refused.
 */
export function resolveBudget(
  budget: BudgetOptions | undefined,
  identityNames: ReadonlySet<string>,
): BudgetConfig | undefined {
  if (budget === undefined) return undefined;
  const fail = (message: string): never => {
    throw new RateLimitConfigError(`rateLimitDirective: budget${message}`);
  };
  if (typeof budget !== 'object' || budget === null || Array.isArray(budget)) {
    fail(
      ' must be an object: { limit, window, algorithm?, by?, maxCost?, listSize?, inFlight?, time? }',
    );
  }
  for (const key of Object.keys(budget)) {
    if (!KEYS.has(key)) fail(`.${key} is not an option; use ${[...KEYS].join(', ')}`);
  }
  const { limit, window, by, maxCost } = budget;
  const algorithm = budget.algorithm ?? 'TOKEN_BUCKET';
  const rule = { action: BUDGET_ACTION, algorithm, windowSeconds: window, limit, cost: 1, by };
  const problem =
    algorithm === 'CONCURRENCY'
      ? {
          field: 'algorithm' as const,
          value: algorithm,
          why: 'is not for a budget, which prices work over a window (CONCURRENCY bounds calls in flight: put it on a field)',
        }
      : ruleProblem(rule);
  if (problem) {
    const name = problem.field === 'windowSeconds' ? 'window' : problem.field;
    fail(`.${valueProblem(name, problem.value, problem.why)}`);
  }
  if (by !== undefined) {
    if (typeof by !== 'string' || by.startsWith(ARGUMENT_SOURCE)) {
      fail(`.by ${JSON.stringify(by)}: an operation has no arguments; name one of \`identities\``);
    }
    if (!identityNames.has(by)) {
      fail(
        `.by ${JSON.stringify(by)} is not one of \`identities\` (${[...identityNames].join(', ') || 'none'})`,
      );
    }
  }
  if (maxCost !== undefined && !(Number.isSafeInteger(maxCost) && maxCost >= 1)) {
    fail(`.maxCost must be a whole number >= 1, got ${showValue(maxCost)}`);
  }
  const listSize = budget.listSize ?? COST_DEFAULTS.listSize;
  if (!Number.isSafeInteger(listSize) || listSize < 0) {
    fail(`.listSize must be a whole number >= 0, got ${showValue(listSize)}`);
  }
  return {
    rule,
    ceiling: Math.min(maxCost ?? limit, limit),
    maxCost,
    listSize,
    secondary: resolveSecondary(budget.inFlight, budget.time, by),
  };
}
