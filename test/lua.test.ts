import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { luaScript, type ScriptName } from '../src/lua';

const SCRIPTS: readonly ScriptName[] = ['hit', 'give-back'];
const raw = (file: string): string =>
  readFileSync(join(__dirname, '..', 'lua', `${file}.lua`), 'utf8');
const functionsOf = (text: string): string[] =>
  [...text.matchAll(/^local function (\w+)/gm)].map((m) => m[1] as string);

test('the scripts include what they share from lua/lib, and Redis gets the expanded text', () => {
  for (const name of SCRIPTS) {
    const sent = luaScript(name);
    expect(sent).not.toMatch(/@include/);
    for (const fragment of ['lib/clock', 'lib/bucket-time', 'lib/sliding-member']) {
      expect(raw(name)).toContain(`--- @include "${fragment}"`);
      expect(sent).toContain(raw(fragment).trimEnd());
    }
  }
});

test('no helper is written in both scripts: the bucket value and the log members have one home', () => {
  const hit = new Set(functionsOf(raw('hit')));
  const shared = functionsOf(raw('give-back')).filter((f) => hit.has(f));
  expect(shared).toEqual([]);
  expect(functionsOf(raw('lib/bucket-time'))).toEqual(['interval', 'span', 'readTat', 'tatValue']);
});
