import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

/*
 * The published declarations name no server package: the Apollo and envelop plugins' types are
 * spelled out, so a consumer of one server compiles without the other installed (the package
 * test compiles a consumer that has @apollo/server but no envelop or Yoga package).
 */

const dist = join(__dirname, '..', '..', 'dist');
const ALLOWED = new Set(['graphql', 'ioredis']);

function declarations(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return declarations(path);
    return entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

test('the published .d.ts files import only graphql, ioredis and each other', () => {
  const files = declarations(dist);
  expect(files.map((f) => relative(dist, f))).toEqual(
    expect.arrayContaining(['index.d.ts', 'envelop-plugin.d.ts', 'plugin.d.ts']),
  );
  const foreign = files.flatMap((file) =>
    [...readFileSync(file, 'utf8').matchAll(/(?:from |import\()'([^'.][^']*)'/g)]
      .map((m) => m[1] as string)
      .filter((name) => !ALLOWED.has(name))
      .map((name) => `${relative(dist, file)} imports ${name}`),
  );
  expect(foreign).toEqual([]);
});
