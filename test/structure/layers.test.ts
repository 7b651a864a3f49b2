import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

import ts from 'typescript';

/*
 * Arrows only go down: each entry of src/ (a root file, or a folder with all it holds) stands on
 * one floor of LAYERS, and may import only from floors below its own. A new entry of src/ fails
 * here until it is given a floor, and so does any circle of files, inside a folder or across.
 * docs/architecture.md says, floor by floor, what each may import.
 */

/** The floors of src/, from the top down; entries on one floor do not import each other. */
const LAYERS: readonly (readonly string[])[] = [
  ['index.ts'],
  ['nestjs/', 'mercurius/', 'opentelemetry/'],
  ['directive.ts'],
  ['plugins/'],
  ['budget/'],
  ['decide/'],
  ['identities/'],
  ['options/'],
  ['decision-events.ts', 'upstash/'],
  ['schema/', 'stores/'],
  ['cost/', 'rate-limit-rule.ts'],
  ['errors.ts', 'warnings.ts', 'show-value.ts'],
  ['runtime.ts'],
];

const src = join(__dirname, '..', '..', 'src');

const files = (dir: string): string[] =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return files(path);
    return name.endsWith('.ts') ? [path] : [];
  });

/** The entry of src/ that `file` belongs to: `directive.ts`, or `stores/` for all it holds. */
const entryOf = (file: string): string => {
  const [first, ...rest] = relative(src, file).split('/');
  return rest.length ? `${first}/` : (first as string);
};

/** The files of src/ that `file` imports, as the compiler reads its import lines. */
const importsOf = (file: string): string[] =>
  ts
    .preProcessFile(readFileSync(file, 'utf8'), true, true)
    .importedFiles.map((ref) => ref.fileName)
    .filter((name) => name.startsWith('.'))
    .map((name) => {
      const base = resolve(dirname(file), name);
      const found = [`${base}.ts`, join(base, 'index.ts')].find((path) => existsSync(path));
      if (!found)
        throw new Error(`${relative(src, file)} imports ${name}, which is no file of src/`);
      return found;
    });

const floorOf = new Map(LAYERS.flatMap((floor, index) => floor.map((entry) => [entry, index])));
const all = files(src);
const arrows = new Map(all.map((file) => [file, importsOf(file)]));

test('every entry of src/ stands on a floor', () => {
  const entries = readdirSync(src, { withFileTypes: true }).map((entry) =>
    entry.isDirectory() ? `${entry.name}/` : entry.name,
  );
  expect(entries.filter((entry) => !floorOf.has(entry))).toEqual([]);
  expect([...floorOf.keys()].filter((entry) => !entries.includes(entry))).toEqual([]);
});

test('no entry of src/ imports one on its own floor or above it', () => {
  const upward: string[] = [];
  for (const [file, targets] of arrows) {
    for (const target of targets) {
      const from = entryOf(file);
      const to = entryOf(target);
      if (from === to) continue;
      if ((floorOf.get(from) as number) >= (floorOf.get(to) as number)) {
        upward.push(`${relative(src, file)} -> ${relative(src, target)}`);
      }
    }
  }
  expect(upward).toEqual([]);
});

test('no files of src/ import each other in a circle', () => {
  const done = new Set<string>();
  const path: string[] = [];
  const circles: string[] = [];
  const visit = (file: string): void => {
    if (done.has(file)) return;
    const at = path.indexOf(file);
    if (at >= 0) {
      circles.push([...path.slice(at), file].map((f) => relative(src, f)).join(' -> '));
      return;
    }
    path.push(file);
    for (const target of arrows.get(file) ?? []) visit(target);
    path.pop();
    done.add(file);
  };
  all.forEach(visit);
  expect(circles).toEqual([]);
});
