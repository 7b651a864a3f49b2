import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The Lua files this library sends to Redis, by file name in `lua/`. */
export type ScriptName = 'hit' | 'refund' | 'lease' | 'operation' | 'library';

const cache = new Map<ScriptName, string>();

/** The folder of the scripts. It sits beside both `src/` and `dist/`. */
const LUA_DIR = join(__dirname, '..', '..', '..', 'lua');

/** A line that stands for a fragment of `lua/`, as `--- @include "lib/clock"`. */
const INCLUDE = /^--- @include "([a-z][a-z0-9/-]*)"[ \t]*$/gm;

/**
 * The source of `lua/<name>.lua`, read once, with each `--- @include "lib/x"` line replaced by
 * the text of `lua/lib/x.lua` (itself expanded), so that what the scripts share is written once.
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

/** A Redis Functions library: its name and the text FUNCTION LOAD takes. */
export interface LuaLibrary {
  /** Names this text's version: `graphql_atomic_rate_limit_` and 12 digits of its SHA-1. */
  readonly name: string;
  readonly source: string;
  /** The name of each function (`<name>_hit`, `<name>_refund`, `<name>_lease`, `<name>_operation`). */
  readonly hit: string;
  readonly refund: string;
  readonly lease: string;
  /** `<name>_ready`: answers 1, touches nothing; the set-up's probe of FCALL. */
  readonly ready: string;
  readonly operation: string;
}

let library: LuaLibrary | undefined;

/**
 * `lua/library.lua`, expanded, under the two lines that name it (see its header): its name holds
 * the SHA-1 of the text, so that every version of the package loads and calls its own.
 */
export function luaLibrary(): LuaLibrary {
  if (library === undefined) {
    const body = luaScript('library');
    const sha = createHash('sha1').update(body).digest('hex').slice(0, 12);
    const name = `graphql_atomic_rate_limit_${sha}`;
    library = {
      name,
      source: `#!lua name=${name}\nlocal NAME = '${name}'\n${body}`,
      hit: `${name}_hit`,
      refund: `${name}_refund`,
      lease: `${name}_lease`,
      ready: `${name}_ready`,
      operation: `${name}_operation`,
    };
  }
  return library;
}

function expand(file: string, included: Set<string>): string {
  const text = readFileSync(join(LUA_DIR, `${file}.lua`), 'utf8');
  return text.replace(INCLUDE, (_line, fragment: string) => {
    if (included.has(fragment)) return `-- ${fragment}: included above`;
    included.add(fragment);
    return expand(fragment, included).trimEnd();
  });
}
