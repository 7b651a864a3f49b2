import { emitWarning } from './runtime';

/**
 * The `code` of every process warning this library emits, one home for all of them: a process
 * tells them apart with `process.on('warning', (w) => w.code)`, and docs/troubleshooting.md
 * gives each one's causes and fixes. Each warning is emitted once per process (or per
 * directive), never per request.
 */
export const WARNING_CODES = {
  /** `identify` or an identity source gave no identity for the first 100 limited hits. */
  MISSING_IDENTITY: 'GRAPHQL_RATE_LIMIT_MISSING_IDENTITY',
  /** The `onDecision` hook threw; reported once per directive, the decision stands. */
  ON_DECISION_THREW: 'GRAPHQL_RATE_LIMIT_ON_DECISION_THREW',
  /** A budget is on, but the schema carries no `@cost` and no `@listSize`. */
  UNPRICED_SCHEMA: 'GRAPHQL_RATE_LIMIT_UNPRICED_SCHEMA',
  /** A budget is set, but no server plugin has brought it an operation: nothing is charged. */
  BUDGET_UNENFORCED: 'GRAPHQL_RATE_LIMIT_BUDGET_UNENFORCED',
  /**
   * A Redis server holds another Functions library under this package's library name: it is
   * left alone, and the store runs its scripts there instead.
   */
  FOREIGN_LIBRARY: 'GRAPHQL_RATE_LIMIT_FOREIGN_LIBRARY',
} as const;

/** One of {@link WARNING_CODES}. */
export type RateLimitWarningCode = (typeof WARNING_CODES)[keyof typeof WARNING_CODES];

/** Emits `message` as a process warning with its `code`. */
export function warn(message: string, code: RateLimitWarningCode): void {
  emitWarning(message, code);
}
