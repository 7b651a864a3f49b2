import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { HIT_REPLY, REFUND_REPLY } from '../../src/stores/redis/reply-codes';

/*
 * The scripts' reply codes are named once: src/stores/redis/reply-codes.ts for the TypeScript,
 * the `Codes` table of each script's header for its reader, and the locals of lua/lib/batch.lua
 * for the Lua that answers them. A code changed on one side fails here.
 */

const lua = (name: string): string =>
  readFileSync(join(__dirname, '..', '..', 'lua', `${name}.lua`), 'utf8');

/** The `NAME = value` lines of a script's header (its opening `--[[ ... ]]`). */
function headerCodes(name: string): Record<string, number> {
  const text = lua(name);
  const header = text.slice(0, text.indexOf(']]'));
  return Object.fromEntries(
    [...header.matchAll(/^ +([A-Z][A-Z_]*) = (-?\d+) /gm)].map(([, code, value]) => [
      code,
      Number(value),
    ]),
  );
}

/** The codes lib/batch.lua declares: `local A, B = 1, 0` lines of upper-case names. */
function batchCodes(): Record<string, number> {
  const codes: Record<string, number> = {};
  for (const [, names, values] of lua('lib/batch').matchAll(
    /^local ([A-Z][A-Z_]*(?:, [A-Z][A-Z_]*)*) = (-?\d+(?:, -?\d+)*)$/gm,
  )) {
    const numbers = (values as string).split(', ').map(Number);
    (names as string).split(', ').forEach((code, i) => (codes[code] = numbers[i] as number));
  }
  return codes;
}

test("lua/hit.lua's header names HIT_REPLY's codes and REFUND_REPLY's", () => {
  expect(headerCodes('hit')).toEqual({ ...HIT_REPLY, ...REFUND_REPLY });
});

test("lua/refund.lua's header names REFUND_REPLY's codes", () => {
  expect(headerCodes('refund')).toEqual(REFUND_REPLY);
});

test('lua/lib/batch.lua answers with the same codes under the same names', () => {
  expect(batchCodes()).toEqual({ ...HIT_REPLY, ...REFUND_REPLY });
});
