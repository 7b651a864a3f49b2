import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

import { luaScript, type ScriptName } from '../../src/lua';

const SCRIPTS: readonly ScriptName[] = ['hit', 'give-back'];
const LUA = join(__dirname, '..', '..', 'lua');
const raw = (file: string): string => readFileSync(join(LUA, `${file}.lua`), 'utf8');
const FRAGMENTS = readdirSync(join(LUA, 'lib')).map((f) => `lib/${f.replace(/\.lua$/, '')}`);
const functionsOf = (text: string): string[] =>
  [...text.matchAll(/^local function (\w+)/gm)].map((m) => m[1] as string);

test('the scripts include what they share from lua/lib, once each, and Redis gets the expanded text', () => {
  expect(FRAGMENTS).toEqual(
    expect.arrayContaining(['lib/clock', 'lib/bucket-time', 'lib/sliding-member']),
  );
  for (const name of SCRIPTS) {
    const sent = luaScript(name);
    expect(sent).not.toMatch(/@include/);
    for (const fragment of FRAGMENTS) expect(sent).toContain(raw(fragment).trimEnd());
    const defined = functionsOf(sent);
    expect(defined).toEqual([...new Set(defined)]);
  }
});

test('no helper is written twice in lua/: the bucket value and the log members have one home', () => {
  const files = ['hit', 'give-back', 'give-back-steps', ...FRAGMENTS];
  const defined = files.flatMap((file) => functionsOf(raw(file)));
  expect(defined).toEqual([...new Set(defined)]);
  expect(functionsOf(raw('lib/bucket-time'))).toEqual(['interval', 'span', 'readTat', 'tatValue']);
});
