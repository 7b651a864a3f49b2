import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The scripts this library runs, by file name in `lua/`. */
export type ScriptName = 'hit' | 'give-back';

const cache = new Map<ScriptName, string>();

/** The folder of the scripts, beside both `src/` and `dist/`. */
const LUA_DIR = join(__dirname, '..', 'lua');

/**
 * A line `--- @include "<part>"` stands for `lua/<part>.lua`: Lua that two scripts share is
 * written once (a Redis script is one chunk, with no `require`).
 */
const INCLUDE = /^--- @include "([a-z-]+)"$/gm;

/** The source of `lua/<name>.lua`, its includes in place, read once. */
export function luaScript(name: ScriptName): string {
  let source = cache.get(name);
  if (source === undefined) {
    source = readFileSync(join(LUA_DIR, `${name}.lua`), 'utf8').replace(INCLUDE, (_, part) =>
      readFileSync(join(LUA_DIR, `${String(part)}.lua`), 'utf8'),
    );
    cache.set(name, source);
  }
  return source;
}

/**
 * The name `defineCommand` registers `source` under: `stem` and the script's digest, so two
 * copies of this library sharing one ioredis client never overwrite each other's command.
 */
export function commandName(stem: string, source: string): string {
  return `${stem}_${createHash('sha1').update(source).digest('hex').slice(0, 12)}`;
}
