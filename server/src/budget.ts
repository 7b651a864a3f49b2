import type { BudgetOptions, IdentitySource } from 'graphql-atomic-rate-limit';
import type { CtfContext } from './context';

/**
 * The reference server's operation cost budget: each caller may ask for 1,000 points a minute,
 * refilled continuously (about 16.7 a second). The team page's board costs 51 (the team, and
 * 50 challenges by `@listSize`), and gets back what the challenges that exist did not use.
 */
export const CTF_BUDGET: BudgetOptions = { limit: 1_000, window: 60, by: 'caller' };

/**
 * Who an operation's cost counts against (`identities.caller`): the team, else the admin, on a
 * budget of its own (so an admin's reset never spends a team's points). Nobody else has one:
 * their operations are refused UNAUTHENTICATED before anything runs.
 */
export const caller: IdentitySource<CtfContext> = (context) =>
  context.team?.id ?? (context.admin ? `admin:${context.admin.id}` : undefined);
