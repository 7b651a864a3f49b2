import { GraphQLError } from 'graphql';

import {
  RateLimitUnavailableError,
  UnauthenticatedError,
  type LimitStatus,
  type RateLimitControls,
} from 'graphql-atomic-rate-limit';
import type { CtfContext } from './context';
import type { CtfData } from './data';
import { log } from './log';
import { teamLimitsOf, type TeamLimits } from './team-limits';

/** One limit of a team as `Query.rateLimits` reports it. */
export interface RateLimitStatus {
  readonly action: string;
  readonly limit: number;
  readonly window: number;
  readonly remaining: number;
  /** Whole seconds until the limit is whole again; 0 when it is. */
  readonly resetIn: number;
}

const badInput = (message: string): GraphQLError =>
  new GraphQLError(message, { extensions: { code: 'BAD_USER_INPUT' } });

/** The store failed or timed out: the same answer a limited field gives then. */
async function fromStore<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw new RateLimitUnavailableError(error instanceof Error ? error : new Error(String(error)));
  }
}

/**
 * `Query.rateLimits`, the calling team's limits read with `peek` (counting nothing on them), and
 * `Mutation.resetRateLimit`, an admin's `reset` of one team's limits of one action. The team
 * limits are the rules `transformer` saw (`controls.rules()`), read at the first request: the
 * resolvers are made before the schema is transformed.
 */
export function createLimitResolvers(data: CtfData, controls: RateLimitControls) {
  const teamIds = new Set(data.teams.map((t) => t.id));
  let known: { limits: TeamLimits; actions: ReadonlySet<string> } | undefined;
  const teamLimits = () => {
    if (!known) {
      const limits = teamLimitsOf(controls.rules());
      known = { limits, actions: new Set(limits.actions) };
    }
    return known;
  };
  const toStatus = (s: LimitStatus): RateLimitStatus => ({
    action: s.action,
    limit: s.limit,
    window: s.window,
    remaining: s.remaining,
    resetIn: Math.ceil(s.resetMs / 1000),
  });

  return {
    Query: {
      rateLimits: async (_: unknown, __: unknown, context: CtfContext) => {
        const team = context.team;
        if (!team) throw new UnauthenticatedError('Send Authorization: Bearer <team token>');
        const { shown } = teamLimits().limits;
        const states = await fromStore(() =>
          Promise.all(shown.map((action) => controls.peek({ identity: team.id, action }))),
        );
        return states.flat().map(toStatus);
      },
    },
    Mutation: {
      resetRateLimit: async (
        _: unknown,
        args: { teamId: string; action: string },
        context: CtfContext,
      ) => {
        if (!context.admin) {
          if (context.team) {
            throw new GraphQLError('Only an admin may reset rate limits', {
              extensions: { code: 'FORBIDDEN' },
            });
          }
          throw new UnauthenticatedError('Send Authorization: Bearer <admin token>');
        }
        if (!teamIds.has(args.teamId)) {
          throw badInput(`No team with id ${JSON.stringify(args.teamId)}`);
        }
        const { limits, actions } = teamLimits();
        if (!actions.has(args.action)) {
          throw badInput(
            `No team limit named ${JSON.stringify(args.action)}; the team limits are ${limits.actions
              .map((a) => JSON.stringify(a))
              .join(', ')}`,
          );
        }
        await fromStore(() => controls.reset({ identity: args.teamId, action: args.action }));
        log('info', 'rate limit reset', {
          admin: context.admin.id,
          team: args.teamId,
          action: args.action,
        });
        return true;
      },
    },
  };
}
