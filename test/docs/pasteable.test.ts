import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/*
 * Every code block of the README and of docs/ that a user would paste as a program (one that
 * imports a package) is a file of examples/, byte for byte, which the tests run
 * (test/docs/recipes.test.ts, clients.test.ts, and the package test for the quick start): no page
 * can show code that was never run.
 */

const repo = join(__dirname, '..', '..');
const pages = [
  'README.md',
  ...readdirSync(join(repo, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];
const examples = new Map(
  readdirSync(join(repo, 'examples')).map((f) => [
    readFileSync(join(repo, 'examples', f), 'utf8'),
    f,
  ]),
);

/** The programs a page shows: its fenced code blocks with an `import ... from` line. */
function programs(page: string): string[] {
  const text = readFileSync(join(repo, page), 'utf8');
  return [...text.matchAll(/^```(?:ts|js|mts|mjs|typescript|javascript)\n([\s\S]*?)^```$/gm)]
    .map(([, body = '']) => body)
    .filter((body) => /^import .* from '/m.test(body));
}

test('every program a page shows is a file of examples/, byte for byte', () => {
  const shown = pages.flatMap((page) => programs(page).map((body) => ({ page, body })));
  expect(shown.length).toBeGreaterThanOrEqual(6);
  const strays = shown
    .filter(({ body }) => !examples.has(body))
    .map(({ page, body }) => `${page}: ${body.split('\n').slice(0, 3).join(' / ')}`);
  expect(strays).toEqual([]);
});
