import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';

/*
 * The README is the front door and docs/ holds one page per audience: every page is linked from
 * the README, and every relative link of the README, the docs and BENCHMARKS.md reaches a file
 * that exists and, for a `#fragment`, a heading of that page (GitHub's anchors).
 */

const repo = join(__dirname, '..', '..');
const docs = readdirSync(join(repo, 'docs'))
  .filter((f) => f.endsWith('.md'))
  .map((f) => `docs/${f}`);
const pages = ['README.md', 'BENCHMARKS.md', ...docs];

/** The lines of `page` outside fenced code blocks. */
function prose(page: string): string[] {
  let fenced = false;
  return readFileSync(join(repo, page), 'utf8')
    .split('\n')
    .filter((line) => {
      if (line.startsWith('```')) fenced = !fenced;
      return !fenced && !line.startsWith('```');
    });
}

/** GitHub's anchor of a heading: lower case, no punctuation but `-` and `_`, spaces as `-`. */
const anchor = (heading: string): string =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\w\- ]/g, '')
    .replace(/ /g, '-');

const anchors = (page: string): Set<string> =>
  new Set(
    prose(page).flatMap((line) => {
      const heading = /^#{1,6} (.*)$/.exec(line)?.[1];
      return heading === undefined ? [] : [anchor(heading)];
    }),
  );

test('every docs page is linked from the README', () => {
  const readme = readFileSync(join(repo, 'README.md'), 'utf8');
  expect(docs.filter((page) => !readme.includes(`](${page}`))).toEqual([]);
});

test('every relative link of the README, the docs and BENCHMARKS.md reaches its page and heading', () => {
  const broken = pages.flatMap((page) =>
    prose(page).flatMap((line) =>
      [...line.matchAll(/\]\(([^)\s]+)\)/g)].flatMap(([, target = '']) => {
        if (/^[a-z]+:/.test(target)) return [];
        const [path = '', fragment] = target.split('#');
        const to = path === '' ? page : normalize(join(dirname(page), path));
        if (!existsSync(join(repo, to))) return [`${page}: ${target} (no such file)`];
        if (fragment && to.endsWith('.md') && !anchors(to).has(fragment)) {
          return [`${page}: ${target} (no such heading in ${relative('.', to)})`];
        }
        return [];
      }),
    ),
  );
  expect(broken).toEqual([]);
});
