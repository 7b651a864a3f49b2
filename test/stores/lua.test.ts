import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

import { luaModule, TARGET } from '../../kit/inline-lua';
import { luaScript, luaSha, type ScriptName } from '../../src/stores/redis/lua-loader';
import { closeClients, connectRedis } from '../support/redis';

const SCRIPTS: readonly ScriptName[] = ['hit', 'refund', 'lease', 'operation', 'library'];
const LUA = join(__dirname, '..', '..', 'lua');
const raw = (file: string): string => readFileSync(join(LUA, `${file}.lua`), 'utf8');
const FRAGMENTS = readdirSync(join(LUA, 'lib')).map((f) => `lib/${f.replace(/\.lua$/, '')}`);
/** The fragments `file` includes, and those they include. */
const reached = (file: string): string[] =>
  [...raw(file).matchAll(/^--- @include "([^"]+)"/gm)].flatMap((m) => [
    m[1] as string,
    ...reached(m[1] as string),
  ]);
const functionsOf = (text: string): string[] =>
  [...text.matchAll(/^local function (\w+)/gm)].map((m) => m[1] as string);

test('the scripts include what they share from lua/lib, once each, and Redis gets the expanded text', () => {
  expect(FRAGMENTS).toEqual(
    expect.arrayContaining(['lib/clock', 'lib/bucket-time', 'lib/sliding-member']),
  );
  for (const name of SCRIPTS) {
    const sent = luaScript(name);
    expect(sent).not.toMatch(/@include/);
    for (const fragment of reached(name)) {
      // a fragment's own text, between the includes it expands itself
      for (const own of raw(fragment).split(/^--- @include .*$/m)) {
        if (own.trim() !== '') expect(sent).toContain(own.trim());
      }
    }
    const defined = functionsOf(sent);
    expect(defined).toEqual([...new Set(defined)]);
  }
});

test('the Lua in the build is lua/ as it stands: src/stores/redis/lua-text.ts is current, its digests right', () => {
  // run `node kit/inline-lua.js` (npm run build:library does) after editing lua/
  expect(readFileSync(TARGET, 'utf8')).toBe(luaModule());
  for (const name of SCRIPTS) {
    expect(luaSha(name)).toBe(createHash('sha1').update(luaScript(name)).digest('hex'));
  }
});

test('no helper is written twice in lua/: the bucket value and the log members have one home', () => {
  const files = ['hit', 'refund', 'lease', 'operation', 'library', ...FRAGMENTS];
  const defined = files.flatMap((file) => functionsOf(raw(file)));
  expect(defined).toEqual([...new Set(defined)]);
  expect(functionsOf(raw('lib/bucket-time'))).toEqual(['interval', 'span', 'readTat', 'tatValue']);
});

describe('the token count of a TOKEN_BUCKET', () => {
  afterAll(closeClients);

  // the functions of lua/hit.lua, and a loop over buckets whose time stands anywhere from now to
  // a window ahead, on interval boundaries or between them: what the one division counts
  // against the interval-by-interval count, for every pair that differs (at most 5)
  const script = `${luaScript('hit').split('\nlocal algorithms = ')[0] as string}
math.randomseed(tonumber(ARGV[1]))
local windows = { 1, 2, 3, 7, 60, 61, 3600, 86400, 31622400 }
local limits = { 1, 2, 3, 7, 10, 97, 1000, 65537, 999983, 1000000, 100000000 }
local differ, divided = {}, 0
for i = 1, tonumber(ARGV[2]) do
  local windowUs = windows[math.random(#windows)] * 1000000
  local limit = limits[math.random(#limits)]
  local q, r = interval(windowUs, limit)
  local nowUs = 1733080000000000 + math.random(0, 999999999)
  local us, rem = advance(nowUs, 0, math.random(0, limit), q, r, limit)
  local shape = math.random(4)
  if shape == 2 then us = us + math.random(-3, 3) end
  if shape == 3 then rem = math.random(0, limit - 1) end
  if shape == 4 then us, rem = nowUs + windowUs, math.random(0, limit - 1) end
  if us < nowUs then us, rem = nowUs, 0 end
  if us > nowUs + windowUs then us, rem = nowUs + windowUs, 0 end
  if (nowUs + windowUs - us) * limit <= EXACT then divided = divided + 1 end
  local fast, counted = tokens(nowUs, windowUs, us, rem, q, r, limit), countTokens(nowUs, windowUs, us, rem, q, r, limit)
  if fast ~= counted and #differ < 5 then
    differ[#differ + 1] = table.concat({ int(windowUs), int(limit), int(us - nowUs), int(rem), int(fast), int(counted) }, ' ')
  end
end
return { divided, differ }`;

  test('one division counts what counting interval by interval counts', async () => {
    const redis = await connectRedis();
    for (const seed of [1, 2, 3]) {
      const [divided, differ] = (await redis.eval(script, 0, seed, 50_000)) as [number, string[]];
      // most draws take the division (long windows of many tokens are counted)
      expect(divided).toBeGreaterThan(40_000);
      // window, limit, time ahead of now, remainder, divided, counted
      expect(differ).toEqual([]);
    }
  });
});
