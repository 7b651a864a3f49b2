// @ts-check
'use strict';

const { createHash } = require('node:crypto');
const { readFileSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');

/*
 * The Lua text as the package sends it, made at build time: `lua/` stays the one source, and
 * `src/stores/redis/lua-text.ts`, which this writes (`npm run build:library` runs it; test/stores/lua.test.ts
 * fails when the committed file is not what it would write), carries each script with its
 * `--- @include "lib/x"` lines expanded and its SHA-1, so that the package reads no file and
 * hashes nothing at run time, and loads where there is no `node:fs` (Cloudflare Workers,
 * Vercel Edge).
 */

const LUA_DIR = join(__dirname, '..', 'lua');
const TARGET = join(__dirname, '..', 'src', 'stores', 'redis', 'lua-text.ts');

/** The scripts sent to Redis, by file name in `lua/`. */
const SCRIPTS = /** @type {const} */ (['hit', 'refund', 'lease', 'operation', 'library']);

/** A line that stands for a fragment of `lua/`, as `--- @include "lib/clock"`. */
const INCLUDE = /^--- @include "([a-z][a-z0-9/-]*)"[ \t]*$/gm;

/**
 * The source of `lua/<file>.lua` with each `--- @include "lib/x"` line replaced by the text of
 * `lua/lib/x.lua` (itself expanded). Each fragment goes in once per script, where it is first
 * included.
 * @param {string} file @param {Set<string>} included @returns {string}
 */
function expand(file, included) {
  const text = readFileSync(join(LUA_DIR, `${file}.lua`), 'utf8');
  return text.replace(INCLUDE, (_line, /** @type {string} */ fragment) => {
    if (included.has(fragment)) return `-- ${fragment}: included above`;
    included.add(fragment);
    return expand(fragment, included).trimEnd();
  });
}

/** @param {string} text */
const sha1 = (text) => createHash('sha1').update(text).digest('hex');

/** The text of `src/stores/redis/lua-text.ts` for the current `lua/`. @returns {string} */
function luaModule() {
  const entries = SCRIPTS.map((name) => {
    const source = expand(name, new Set());
    return `  ${name}: {\n    source: ${JSON.stringify(source)},\n    sha: '${sha1(source)}',\n  },`;
  });
  return [
    '// Written by kit/inline-lua.js from lua/ (npm run build:library): edit lua/, not this file.',
    '',
    '/** Each script of `lua/`, its includes expanded, and the SHA-1 of that text. */',
    'export const LUA_TEXT = {',
    ...entries,
    '} as const;',
    '',
  ].join('\n');
}

if (require.main === module) {
  const text = luaModule();
  let current = '';
  try {
    current = readFileSync(TARGET, 'utf8');
  } catch {
    current = '';
  }
  if (current !== text) writeFileSync(TARGET, text);
}

module.exports = { luaModule, TARGET };
