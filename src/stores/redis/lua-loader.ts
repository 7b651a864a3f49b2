import { LUA_TEXT } from './lua-text';

/** The Lua files this library sends to Redis, by file name in `lua/`. */
export type ScriptName = keyof typeof LUA_TEXT;

/**
 * The source of `lua/<name>.lua`, with each `--- @include "lib/x"` line replaced by the text of
 * `lua/lib/x.lua` (itself expanded), so that what the scripts share is written once. Each
 * fragment goes in once per script, where it is first included. The text sent to Redis, and
 * hashed for EVALSHA, is the expanded one. It is expanded at build time (kit/inline-lua.js
 * writes src/stores/redis/lua-text.ts), so that nothing reads a file at run time.
 */
export function luaScript(name: ScriptName): string {
  return LUA_TEXT[name].source;
}

/** The SHA-1 of {@link luaScript}'s text, as EVALSHA names it. */
export function luaSha(name: ScriptName): string {
  return LUA_TEXT[name].sha;
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
    const name = `graphql_atomic_rate_limit_${luaSha('library').slice(0, 12)}`;
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
