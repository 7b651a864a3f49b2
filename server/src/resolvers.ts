import { createHash, timingSafeEqual } from 'node:crypto';

import { GraphQLError } from 'graphql';

import { UnauthenticatedError } from 'graphql-atomic-rate-limit';
import type { CtfContext } from './context';
import type { ChallengeRecord, CtfData, TeamRecord } from './data';

const digest = (value: string): Buffer => createHash('sha256').update(value).digest();

/** Compares in time independent of where the strings differ (and of their lengths). */
function flagMatches(expected: string, given: string): boolean {
  return timingSafeEqual(digest(expected), digest(given));
}

/** How long `exportScoreboard` takes. */
export const EXPORT_MS = 500;

function teamOf(context: CtfContext): TeamRecord {
  if (!context.team) throw new UnauthenticatedError('Send Authorization: Bearer <team token>');
  return context.team;
}

/** The reference server's resolvers and the per-process game state they keep. */
export function createResolvers(data: CtfData) {
  const challenges = new Map(data.challenges.map((c) => [c.id, c]));
  const solved = new Map<string, Set<string>>();
  const submissions = new Map<string, number>();
  const solvedBy = (teamId: string): Set<string> => {
    let set = solved.get(teamId);
    if (!set) solved.set(teamId, (set = new Set()));
    return set;
  };

  return {
    Query: {
      // The read limit has already charged `first` units: the list never returns more.
      challenges: (_: unknown, args: { first: number }, context: CtfContext) => {
        const done = solvedBy(teamOf(context).id);
        if (!Number.isSafeInteger(args.first) || args.first < 0) {
          throw new GraphQLError('`first` must be a whole number >= 0', {
            extensions: { code: 'BAD_USER_INPUT' },
          });
        }
        return data.challenges
          .slice(0, args.first)
          .map((c) => ({ ...publicView(c), solved: done.has(c.id) }));
      },
      me: (_: unknown, __: unknown, context: CtfContext) => teamOf(context),
      exportScoreboard: async (_: unknown, __: unknown, context: CtfContext) => {
        teamOf(context);
        // a slow query: what the concurrency limit of the field is for
        await new Promise((resolve) => setTimeout(resolve, EXPORT_MS));
        const score = (team: TeamRecord) =>
          [...solvedBy(team.id)].reduce((sum, id) => sum + (challenges.get(id)?.points ?? 0), 0);
        return data.teams.map((team) => `${team.name},${score(team)}`).join('\n');
      },
    },
    Team: {
      score: (team: TeamRecord) =>
        [...solvedBy(team.id)].reduce((sum, id) => sum + (challenges.get(id)?.points ?? 0), 0),
      submissions: (team: TeamRecord) => submissions.get(team.id) ?? 0,
    },
    Mutation: {
      submitFlag: (
        _: unknown,
        args: { challengeId: string; flag: string },
        context: CtfContext,
      ) => {
        const team = teamOf(context);
        submissions.set(team.id, (submissions.get(team.id) ?? 0) + 1);
        const challenge = challenges.get(args.challengeId);
        if (!challenge) {
          throw new GraphQLError(`No challenge with id ${JSON.stringify(args.challengeId)}`, {
            extensions: { code: 'BAD_USER_INPUT' },
          });
        }
        const correct = flagMatches(challenge.flag, args.flag);
        if (correct) solvedBy(team.id).add(challenge.id);
        return { correct, challengeId: challenge.id };
      },
    },
  };
}

function publicView(c: ChallengeRecord): Omit<ChallengeRecord, 'flag'> {
  return { id: c.id, title: c.title, points: c.points };
}
