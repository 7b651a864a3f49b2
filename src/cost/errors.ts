import { GraphQLError } from 'graphql';

import type { RateLimitErrorCode } from '../errors';

/**
 * Why a document is too complex to price, in `extensions.reason`: `TOO_DEEP` when its selections
 * nest deeper than {@link MAX_DEPTH}, `TOO_COMPLEX` when pricing it would take more steps than
 * its size pays for, at most {@link MAX_WORK} (see `bounds`: `workBound`).
 */
export type CostQueryReason = 'TOO_DEEP' | 'TOO_COMPLEX';

/**
 * The operation cannot be priced: a field with `@listSize(requireOneSlicingArgument: true)` got
 * none or several of its slicing arguments, a slicing argument is negative, the operation to
 * price is ambiguous or unknown, or the document is too deep or too complex to price (then
 * `extensions.reason` says which). The code is the one Apollo Router, Hive and Caliban give
 * for the same refusal.
 */
export class CostQueryError extends GraphQLError {
  /** `httpStatus`: for a refusal before the document is parsed, which servers answer alone. */
  constructor(message: string, reason?: CostQueryReason, httpStatus?: number) {
    super(message, {
      extensions: {
        code: 'COST_QUERY_PARSE_FAILURE' satisfies RateLimitErrorCode,
        ...(reason && { reason }),
        ...(httpStatus && { http: { status: httpStatus } }),
      },
    });
    this.name = 'CostQueryError';
  }
}

/**
 * The request's variables do not coerce to the operation's variable definitions: `errors` are
 * GraphQL's own coercion errors, the ones execution answers. Nothing can be priced, and nothing
 * needs to be: such an operation runs no resolver.
 */
export class CostVariablesError extends GraphQLError {
  constructor(readonly errors: readonly GraphQLError[]) {
    super(errors[0]?.message ?? 'Variables do not coerce', {
      extensions: { code: 'BAD_USER_INPUT' },
    });
    this.name = 'CostVariablesError';
  }
}
