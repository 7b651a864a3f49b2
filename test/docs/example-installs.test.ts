import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/*
 * docs/getting-started.md "What each example needs": every file of examples/ has a row, and the
 * row's `npm install` names every package the file imports (and graphql beside this package,
 * its peer), so that a reader who pastes an example and installs its row can run it.
 */

const repo = join(__dirname, '..', '..');
const page = readFileSync(join(repo, 'docs', 'getting-started.md'), 'utf8');
const section = page.slice(page.indexOf('\n## What each example needs\n')).split(/\n## /)[1] ?? '';

/** The install line of each example named in the table. */
const rows = new Map(
  [...section.matchAll(/^\| (`[^|]+`) +\| `([^`]+)` +\|/gm)].flatMap(
    ([, names = '', install = '']) =>
      [...names.matchAll(/`([^`]+)`/g)].map(([, name]) => [name as string, install.split(' ')]),
  ),
);

/** The package a module specifier comes from: `@scope/name/sub` is `@scope/name`. */
const packageOf = (specifier: string): string =>
  specifier
    .split('/')
    .slice(0, specifier.startsWith('@') ? 2 : 1)
    .join('/');

const examples = readdirSync(join(repo, 'examples')).sort();

test('every example has a row, and every row is an example', () => {
  expect([...rows.keys()].sort()).toEqual(examples);
});

test.each(examples)('the row of examples/%s installs every package it imports', (file) => {
  const source = readFileSync(join(repo, 'examples', file), 'utf8');
  const imported = [...source.matchAll(/^import (?:[^'"]* from )?'([^'.][^']*)';$/gm)]
    .map(([, specifier]) => packageOf(specifier as string))
    .filter((name) => !name.startsWith('node:'));
  const needed = imported.includes('graphql-atomic-rate-limit')
    ? [...imported, 'graphql']
    : imported;
  const installed = rows.get(file) ?? [];
  expect([...new Set(needed)].filter((name) => !installed.includes(name))).toEqual([]);
});

test('running a .ts example as the pages do names its install: tsx', () => {
  expect(section).toContain('`npm install --save-dev tsx`');
  const readme = readFileSync(join(repo, 'README.md'), 'utf8');
  expect(readme).toMatch(/npx tsx quick-start\.ts[^.]*`npm install --save-dev tsx`/);
});
