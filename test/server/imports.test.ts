import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

/*
 * The reference server stands on the published package: it names the library by its package
 * name (which its own build resolves to the library's types, so only exported names compile),
 * never by a path into src/ or dist/; and the library never reaches into the server.
 */

const repo = join(__dirname, '..', '..');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Every module `file` imports, relative ones resolved to a path under the repository. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/(?:from |import\(|require\()'([^']+)'/g)].map(([, spec = '']) =>
    spec.startsWith('.') ? relative(repo, resolve(file, '..', spec)) : spec,
  );
}

test('the server imports the library by its package name only, never by a path', () => {
  const server = join(repo, 'server', 'src');
  const stray = sources(server).flatMap((file) =>
    importsOf(file)
      .filter((spec) => spec.startsWith('..') || /^(src|dist)(\/|$)/.test(spec))
      .map((spec) => `${relative(repo, file)} imports ${spec}`),
  );
  expect(stray).toEqual([]);
  const named = sources(server).filter((file) =>
    importsOf(file).includes('graphql-atomic-rate-limit'),
  );
  expect(named.length).toBeGreaterThan(3);
});

test('no file of the library imports from the server', () => {
  const stray = sources(join(repo, 'src')).flatMap((file) =>
    importsOf(file)
      .filter((spec) => /^server(\/|$)/.test(spec))
      .map((spec) => `${relative(repo, file)} imports ${spec}`),
  );
  expect(stray).toEqual([]);
});
