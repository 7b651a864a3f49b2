import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

import type { CtfData, TeamRecord } from './data';

/** What every resolver sees: the calling team, when its bearer token is known. */
export interface CtfContext {
  readonly team?: TeamRecord | undefined;
}

const digest = (value: string): string => createHash('sha256').update(value).digest('hex');

/**
 * Builds the per-request context from the `Authorization: Bearer <token>` header. Tokens are
 * looked up by digest, so no comparison runs over a secret's bytes. A missing or unknown token
 * leaves `team` undefined: rate-limited fields then answer UNAUTHENTICATED and count nothing.
 */
export function createContextFactory(data: CtfData): (headers: IncomingHttpHeaders) => CtfContext {
  const byToken = new Map(data.teams.map((team) => [digest(team.token), team]));
  return (headers) => {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(headers.authorization ?? '');
    return { team: match?.[1] ? byToken.get(digest(match[1])) : undefined };
  };
}
