import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

/*
 * The published declarations name no server package: the Apollo and envelop plugins' types are
 * spelled out, so a consumer of one server compiles without the other installed (the package
 * test compiles a consumer that has @apollo/server but no envelop or Yoga package).
 */

const dist = join(__dirname, '..', 'dist');
/** What each published folder's declarations may import: the root only graphql and ioredis. */
const ALLOWED: Record<string, readonly string[]> = {
  '.': ['graphql', 'ioredis'],
  nestjs: ['graphql', 'ioredis', '@nestjs/common'],
  mercurius: ['graphql', 'ioredis', 'fastify', 'mercurius'],
};
/** The framework subpaths: nothing outside their folder may reach into them. */
const SUBPATHS = ['nestjs', 'mercurius'];

function files(dir: string, ending: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'server' ? [] : files(path, ending);
    return entry.name.endsWith(ending) ? [path] : [];
  });
}

/** The published folder a file belongs to: a framework subpath, else the root (`.`). */
const folderOf = (file: string): string => {
  const [top = '.'] = relative(dist, file).split('/');
  return SUBPATHS.includes(top) ? top : '.';
};

test('the published .d.ts files import only graphql, ioredis, each other and their framework', () => {
  const declarations = files(dist, '.d.ts');
  expect(declarations.map((f) => relative(dist, f))).toEqual(
    expect.arrayContaining([
      'index.d.ts',
      'envelop-plugin.d.ts',
      'plugin.d.ts',
      'nestjs/index.d.ts',
      'mercurius/index.d.ts',
    ]),
  );
  const foreign = declarations.flatMap((file) => {
    const allowed = ALLOWED[folderOf(file)] ?? [];
    return [...readFileSync(file, 'utf8').matchAll(/(?:from |import\()'([^'.][^']*)'/g)]
      .map((m) => m[1] as string)
      .filter((name) => !allowed.includes(name))
      .map((name) => `${relative(dist, file)} imports ${name}`);
  });
  expect(foreign).toEqual([]);
});

test('nothing outside a framework subpath reaches into it, in types or at run time', () => {
  const reaching = [...files(dist, '.d.ts'), ...files(dist, '.js')]
    .filter((file) => folderOf(file) === '.')
    .flatMap((file) =>
      [...readFileSync(file, 'utf8').matchAll(/(?:from |import\(|require\()["']([^"']+)["']/g)]
        .map((m) => m[1] as string)
        .filter((name) => /(^|\/)(nestjs|mercurius)(\/|$)|^@nestjs\/|^fastify$/.test(name))
        .map((name) => `${relative(dist, file)} imports ${name}`),
    );
  expect(reaching).toEqual([]);
});
