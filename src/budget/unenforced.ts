import { warn, WARNING_CODES } from '../warnings';

/**
 * Where the process keeps that it was told: on `process`, so that two copies of the library (an
 * app's and a dependency's) say it once between them.
 */
export const BUDGET_UNENFORCED_WARNED = Symbol.for('graphql-atomic-rate-limit.budget-unenforced');

/**
 * Says, once per process, that a budget charges nothing: a limited field resolved, and no server
 * plugin has ever brought the budget an operation (the budget is applied by the plugins only).
 */
export function warnBudgetUnenforced(): void {
  const told = process as { [BUDGET_UNENFORCED_WARNED]?: true };
  if (told[BUDGET_UNENFORCED_WARNED]) return;
  told[BUDGET_UNENFORCED_WARNED] = true;
  warn(
    'rateLimitDirective: a `budget` is set, but no server plugin has brought it an operation, so ' +
      "no operation is charged. Add the directive's `plugin` to Apollo Server's `plugins`, its " +
      "`envelopPlugin` to GraphQL Yoga's (or envelop's) `plugins`, or register " +
      '`mercuriusRateLimit` after mercurius.',
    WARNING_CODES.BUDGET_UNENFORCED,
  );
}
