import { GraphQLError } from 'graphql';

/** `caught` as an Error: what was thrown is not always one. */
export function asError(caught: unknown): Error {
  return caught instanceof Error ? caught : new Error(String(caught));
}

/**
 * The `extensions.code` values this library puts on the errors it answers: field errors, and a
 * budget's refusals of a whole operation (`COST_QUERY_PARSE_FAILURE` from the cost estimator).
 */
export type RateLimitErrorCode =
  | 'RATE_LIMITED'
  | 'UNAUTHENTICATED'
  | 'RATE_LIMIT_UNAVAILABLE'
  | 'RATE_LIMIT_COST_EXCEEDED'
  | 'COST_ESTIMATED_TOO_EXPENSIVE'
  | 'COST_QUERY_PARSE_FAILURE'
  | 'OPERATION_RESOLUTION_FAILURE'
  | 'INTERNAL_SERVER_ERROR';

/** What a blocked hit reports to the client. */
export interface RateLimitedDetails {
  readonly action: string;
  readonly limit: number;
  readonly window: number;
  /**
   * Whole seconds, at least 1, until the same hit would pass; for a CONCURRENCY refusal, 1: a
   * poll hint, as a slot frees whenever a call ends.
   */
  readonly retryAfter: number;
  /**
   * `'CONCURRENCY'` when the limit that blocked counts calls in flight (every slot is held; a slot
   * frees as soon as a call ends, at the latest when its lease expires); absent for a limit of
   * hits over time.
   */
  readonly reason?: RefusalReason | undefined;
  /**
   * With `budget.inFlight` or `budget.time`: which of the operation's policies refused it,
   * `'budget'`, `'time'` (execution time; `limit` in ms) or `'inFlight'`.
   */
  readonly policy?: 'budget' | 'time' | 'inFlight' | undefined;
}

/** Why a hit was refused: too many hits over time (`RATE`), or too many calls in flight. */
export type RefusalReason = 'RATE' | 'CONCURRENCY';

/** A limit blocked the hit; nothing was consumed and the resolver did not run. */
export class RateLimitedError extends GraphQLError {
  constructor(readonly details: RateLimitedDetails) {
    super(
      details.reason === 'CONCURRENCY'
        ? `Concurrency limit reached for "${details.action}": ${details.limit} ` +
            `${details.limit === 1 ? 'call' : 'calls'} in flight, the most at once; ` +
            `a slot frees when one ends, retry in ${details.retryAfter}s`
        : `Rate limit exceeded for "${details.action}": ${details.limit} per ${details.window}s; ` +
            `retry in ${details.retryAfter}s`,
      { extensions: { code: 'RATE_LIMITED' satisfies RateLimitErrorCode, ...details } },
    );
    this.name = 'RateLimitedError';
  }
}

/** What a hit too costly for a limit reports: it could never pass, whatever the wait. */
export interface CostExceededDetails {
  readonly action: string;
  readonly limit: number;
  /** The units the hit asked for: `cost` times its `costArg`. */
  readonly cost: number;
}

/** The hit costs more than a limit holds; nothing was counted and the resolver did not run. */
export class RateLimitCostExceededError extends GraphQLError {
  constructor(readonly details: CostExceededDetails) {
    super(
      `Rate limit cost ${details.cost} exceeds the limit of "${details.action}" (${details.limit}); ` +
        'ask for less',
      {
        extensions: {
          code: 'RATE_LIMIT_COST_EXCEEDED' satisfies RateLimitErrorCode,
          ...details,
        },
      },
    );
    this.name = 'RateLimitCostExceededError';
  }
}

/** What an operation too costly for the budget reports: it could never run, whatever the wait. */
export interface TooExpensiveDetails {
  /** The operation's estimated cost. */
  readonly cost: number;
  /** The budget's `maxCost`, when it has one. */
  readonly maxCost?: number | undefined;
  /** The budget's points per window. */
  readonly limit: number;
}

/**
 * The operation's estimated cost is above the budget's `maxCost` or `limit`: it was refused
 * before any field ran and nothing was taken. The code is Apollo Router's for the same refusal.
 */
export class CostEstimatedTooExpensiveError extends GraphQLError {
  constructor(readonly details: TooExpensiveDetails) {
    const most = Math.min(details.maxCost ?? details.limit, details.limit);
    super(`Operation estimated to cost ${details.cost}, above the most one may cost (${most})`, {
      extensions: {
        code: 'COST_ESTIMATED_TOO_EXPENSIVE' satisfies RateLimitErrorCode,
        cost: details.cost,
        ...(details.maxCost === undefined ? {} : { maxCost: details.maxCost }),
        limit: details.limit,
      },
    });
    this.name = 'CostEstimatedTooExpensiveError';
  }
}

/**
 * A budgeted request names no operation of its document that the budget can find (several
 * operations and no `operationName`, or a name the document lacks): the budget cannot price
 * it, so it does not run. GraphQL's own message; the code is Apollo Server's for the same case.
 */
export class OperationNotFoundError extends GraphQLError {
  constructor(readonly operationName: string | null | undefined) {
    super(
      operationName == null
        ? 'Must provide operation name if query contains multiple operations.'
        : `Unknown operation named "${operationName}".`,
      { extensions: { code: 'OPERATION_RESOLUTION_FAILURE' satisfies RateLimitErrorCode } },
    );
    this.name = 'OperationNotFoundError';
  }
}

/** The request has no identity to count against; nothing was counted. */
export class UnauthenticatedError extends GraphQLError {
  constructor(message = 'Authentication required: this field is rate-limited per identity') {
    super(message, { extensions: { code: 'UNAUTHENTICATED' satisfies RateLimitErrorCode } });
    this.name = 'UnauthenticatedError';
  }
}

/** The store failed or timed out and the policy is `'deny'`; the cause is `originalError`. */
export class RateLimitUnavailableError extends GraphQLError {
  constructor(cause: Error) {
    super('Rate limiter unavailable; try again shortly', {
      originalError: cause,
      extensions: { code: 'RATE_LIMIT_UNAVAILABLE' satisfies RateLimitErrorCode },
    });
    this.name = 'RateLimitUnavailableError';
  }
}

/**
 * Who the hit counts against could not be told: `identify` (or an identity source) threw, or
 * returned something that is not an identity. A programming error: the message says which source
 * failed and how (the type it returned, never the value, which may be secret), and the cause
 * stays on `originalError` for the server's logs and hooks.
 */
export class RateLimitIdentityError extends GraphQLError {
  constructor(cause: Error, problem?: string) {
    super(`Rate limit identity could not be determined${problem ? `: ${problem}` : ''}`, {
      originalError: cause,
      extensions: { code: 'INTERNAL_SERVER_ERROR' satisfies RateLimitErrorCode },
    });
    this.name = 'RateLimitIdentityError';
  }
}

/** A directive or an option is invalid; thrown at construction or schema build, never per request. */
export class RateLimitConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RateLimitConfigError';
  }
}

/** A store call ran past `timeoutMs`; its outcome is unknown and it is never replayed. */
export class StoreTimeoutError extends Error {
  constructor(readonly timeoutMs: number) {
    super(`Rate limit store did not answer within ${timeoutMs} ms`);
    this.name = 'StoreTimeoutError';
  }
}
