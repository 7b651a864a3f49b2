import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The scripts this library runs, by file name in `lua/`. */
export type ScriptName = 'hit' | 'give-back' | 'lease';

const cache = new Map<ScriptName, string>();

/** The folder of the scripts. It sits beside both `src/` and `dist/`. */
const LUA_DIR = join(__dirname, '..', 'lua');

/** A line that stands for a fragment of `lua/`, as `--- @include "lib/clock"`. */
const INCLUDE = /^--- @include "([a-z][a-z0-9/-]*)"[ \t]*$/gm;

/**
 * The source of `lua/<name>.lua`, read once, with each `--- @include "lib/x"` line replaced by
 * the text of `lua/lib/x.lua` (itself expanded), so that what both scripts share is written once.
 * Each fragment goes in once per script, where it is first included. The text sent to Redis,
 * and hashed for EVALSHA, is the expanded one.
 */
export function luaScript(name: ScriptName): string {
  let source = cache.get(name);
  if (source === undefined) {
    source = expand(name, new Set());
    cache.set(name, source);
  }
  return source;
}

function expand(file: string, included: Set<string>): string {
  const text = readFileSync(join(LUA_DIR, `${file}.lua`), 'utf8');
  return text.replace(INCLUDE, (_line, fragment: string) => {
    if (included.has(fragment)) return `-- ${fragment}: included above`;
    included.add(fragment);
    return expand(fragment, included).trimEnd();
  });
}
