import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/*
 * docs/architecture.md walks a hit and a budget through src/ and says where each file stands:
 * every entry of src/ at any depth (a file, or a folder as `src/<path>/`) is named
 * there by its path, so a file added, moved or renamed without the page fails here.
 */

const repo = join(__dirname, '..', '..');
const page = readFileSync(join(repo, 'docs', 'architecture.md'), 'utf8');

/** `src/<name>` for each entry of `dir` (folders with a trailing `/`). */
const entries = (dir: string): string[] =>
  readdirSync(join(repo, dir), { withFileTypes: true }).map((entry) =>
    entry.isDirectory() ? `${dir}/${entry.name}/` : `${dir}/${entry.name}`,
  );

/**
 * Whether the page names `path`: in full, or by its name in a paragraph or table row that names
 * its folder.
 */
const named = (path: string): boolean => {
  if (page.includes(`\`${path}\``)) return true;
  const parts = path.split('/').filter(Boolean);
  const name = parts.pop() as string;
  const folder = `\`${parts.join('/')}/\``;
  // a folder's paragraph or table row lists its files by name: `src/cost/`: `plan.ts`, ...
  return page
    .split(/\n\n|\n\|/)
    .some(
      (line) =>
        line.includes(folder) && line.includes(`\`${name}${path.endsWith('/') ? '/' : ''}\``),
    );
};

test('every entry of src/, at any depth, is named in docs/architecture.md', () => {
  // every depth: a folder's entries, and its folders' entries in turn
  const below = (dir: string): string[] =>
    entries(dir).flatMap((e) => (e.endsWith('/') ? [e, ...below(e.slice(0, -1))] : [e]));
  const all = below('src');
  expect(all).toContain('src/stores/redis/clients/ioredis.ts');
  expect(all.filter((path) => !named(path))).toEqual([]);
});
