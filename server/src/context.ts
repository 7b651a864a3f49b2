import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

import type { AdminRecord, CtfData, TeamRecord } from './data';

/** What every resolver sees: the caller its bearer token names, a team or an admin, if any. */
export interface CtfContext {
  readonly team?: TeamRecord | undefined;
  readonly admin?: AdminRecord | undefined;
  /**
   * The client's address as the `TRUST_PROXY` setting reads it (express's `req.ip`): the
   * socket's peer unless proxies are trusted; `by: "ip"` counts against it.
   */
  readonly ip?: string | undefined;
}

const digest = (value: string): string => createHash('sha256').update(value).digest('hex');

/**
 * Builds the per-request context from the `Authorization: Bearer <token>` header. Tokens, of
 * teams and of admins alike, are looked up by digest, so no comparison runs over a secret's
 * bytes. A missing or unknown token leaves both undefined: rate-limited fields then answer
 * UNAUTHENTICATED and count nothing. An admin is no team: it counts against no team's limits.
 */
export function createContextFactory(
  data: CtfData,
): (headers: IncomingHttpHeaders, ip?: string) => CtfContext {
  const teams = new Map(data.teams.map((team) => [digest(team.token), team]));
  const admins = new Map((data.admins ?? []).map((admin) => [digest(admin.token), admin]));
  return (headers, ip) => {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(headers.authorization ?? '');
    if (!match?.[1]) return { ip };
    const key = digest(match[1]);
    return { team: teams.get(key), admin: admins.get(key), ip };
  };
}
