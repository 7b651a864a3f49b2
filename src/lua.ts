import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The scripts this library runs, by file name in `lua/`. */
export type ScriptName = 'hit' | 'give-back';

const cache = new Map<ScriptName, string>();

/** The source of `lua/<name>.lua`, read once. The folder sits beside both `src/` and `dist/`. */
export function luaScript(name: ScriptName): string {
  let source = cache.get(name);
  if (source === undefined) {
    source = readFileSync(join(__dirname, '..', 'lua', `${name}.lua`), 'utf8');
    cache.set(name, source);
  }
  return source;
}
