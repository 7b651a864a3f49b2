import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type { CtfData } from '../../server/src/data';

/** CTF data with `teams` teams (tokens `token-<i>`) and one challenge `c1` whose flag is `CTF{ok}`. */
export function ctfData(teams: number): CtfData {
  return {
    teams: Array.from({ length: teams }, (_, i) => ({
      id: `team-${i}`,
      name: `Team ${i}`,
      token: `token-${i}`,
    })),
    challenges: [{ id: 'c1', title: 'One', points: 100, flag: 'CTF{ok}' }],
  };
}

/** Writes `data` to a fresh temporary JSON file and returns its path. */
export function writeCtfData(data: CtfData): string {
  const path = join(mkdtempSync(join(tmpdir(), 'ctf-')), 'ctf.json');
  writeFileSync(path, JSON.stringify(data));
  return path;
}
