import { readFileSync } from 'node:fs';

/** A team as the data file describes it. */
export interface TeamRecord {
  readonly id: string;
  readonly name: string;
  readonly token: string;
}

/** An operator: may make a team's limits whole again (`resetRateLimit`), and plays no part. */
export interface AdminRecord {
  readonly id: string;
  readonly token: string;
}

/** A challenge as the data file describes it; `flag` never leaves the server. */
export interface ChallengeRecord {
  readonly id: string;
  readonly title: string;
  readonly points: number;
  readonly flag: string;
}

/** The competition: who plays and what there is to solve. */
export interface CtfData {
  readonly teams: readonly TeamRecord[];
  readonly challenges: readonly ChallengeRecord[];
  /** Absent in a file without admins. */
  readonly admins?: readonly AdminRecord[] | undefined;
}

/** Reads and checks the JSON file at `path`; the error names the file and the bad entry. */
export function loadCtfData(path: string): CtfData {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new Error(`CTF data ${path}: ${(error as Error).message}`);
  }
  return checkCtfData(parsed, path);
}

/**
 * Checks the shape of parsed CTF data: unique ids, non-empty strings, whole points, and no token
 * held twice, by two teams or by a team and an admin (one token must name one caller).
 */
export function checkCtfData(value: unknown, source = 'CTF data'): CtfData {
  const fail = (what: string): never => {
    throw new Error(`${source}: ${what}`);
  };
  const root = value as { teams?: unknown; challenges?: unknown; admins?: unknown } | null;
  if (!root || !Array.isArray(root.teams)) fail('"teams" must be an array');
  if (!Array.isArray(root?.challenges)) fail('"challenges" must be an array');
  if (root?.admins !== undefined && !Array.isArray(root.admins)) {
    fail('"admins" must be an array when present');
  }
  const data = root as unknown as CtfData;
  const str = (v: unknown): boolean => typeof v === 'string' && v.length > 0;
  const ids = new Set<string>();
  const tokens = new Set<string>();
  data.teams.forEach((t, i) => {
    if (!str(t?.id) || !str(t?.name) || !str(t?.token))
      fail(`teams[${i}] needs string id, name and token`);
    if (ids.has(t.id)) fail(`teams[${i}]: duplicate id ${JSON.stringify(t.id)}`);
    if (tokens.has(t.token)) fail(`teams[${i}]: token already used by another team`);
    ids.add(t.id);
    tokens.add(t.token);
  });
  const adminIds = new Set<string>();
  (data.admins ?? []).forEach((a, i) => {
    if (!str(a?.id) || !str(a?.token)) fail(`admins[${i}] needs string id and token`);
    if (adminIds.has(a.id)) fail(`admins[${i}]: duplicate id ${JSON.stringify(a.id)}`);
    if (tokens.has(a.token)) fail(`admins[${i}]: token already used by a team or another admin`);
    adminIds.add(a.id);
    tokens.add(a.token);
  });
  const challengeIds = new Set<string>();
  data.challenges.forEach((c, i) => {
    if (!str(c?.id) || !str(c?.title) || !str(c?.flag)) {
      fail(`challenges[${i}] needs string id, title and flag`);
    }
    if (!Number.isSafeInteger(c.points) || c.points < 0)
      fail(`challenges[${i}].points must be a whole number >= 0`);
    if (challengeIds.has(c.id)) fail(`challenges[${i}]: duplicate id ${JSON.stringify(c.id)}`);
    challengeIds.add(c.id);
  });
  return data;
}
