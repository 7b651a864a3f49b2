import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';

/*
 * The README is the front door and docs/ holds one page per audience: every page is linked from
 * the README, and every relative link of the README, the docs and BENCHMARKS.md reaches a file
 * that exists and, for a `#fragment`, a heading of that page (GitHub's anchors); a section cited
 * by name anywhere (README "Algorithms", in a comment too) exists; and every page opens with one
 * title and says whom it is for.
 */

const repo = join(__dirname, '..', '..');
const docs = readdirSync(join(repo, 'docs'))
  .filter((f) => f.endsWith('.md'))
  .map((f) => `docs/${f}`);
const pages = ['README.md', 'BENCHMARKS.md', 'CHANGELOG.md', 'server/README.md', ...docs];

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

/** Every file under `dir` (recursively), skipping built and installed folders. */
function filesUnder(dir: string): string[] {
  return readdirSync(join(repo, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) {
      return ['node_modules', 'dist', 'data', 'public'].includes(entry.name)
        ? []
        : filesUnder(path);
    }
    return statSync(join(repo, path)).size < 1_000_000 ? [path] : [];
  });
}

test('every README section and docs heading that prose or code cites by name exists', () => {
  // README "Algorithms", README's "The directive", docs/redis.md "Eviction policy",
  // docs/budgets.md#refunds-are-exact: in comments, examples and pages alike
  const cited = [
    ...pages,
    ...['src', 'server/src', 'examples', 'lua', 'kit', 'bench', 'test'].flatMap(filesUnder),
  ].filter((f) => f !== 'test/docs/links.test.ts');
  const stale = cited.flatMap((file) => {
    const text = readFileSync(join(repo, file), 'utf8');
    const byName = [
      ...text.matchAll(/\b(server\/README\.md|README|docs\/[\w-]+\.md)(?:'s)? "([^"]+)"/g),
    ].map(([, page = '', heading = '']) => ({
      page: page === 'README' ? 'README.md' : page,
      id: anchor(heading),
    }));
    const byAnchor = file.endsWith('.md')
      ? []
      : [...text.matchAll(/\b(docs\/[\w-]+\.md|(?:server\/)?README\.md)(?:#([\w-]+))?/g)].map(
          ([, page = '', id]) => ({ page, id }),
        );
    return [...byName, ...byAnchor].flatMap(({ page, id }) => {
      if (!existsSync(join(repo, page))) return [`${file}: ${page} (no such page)`];
      if (id !== undefined && !anchors(page).has(id))
        return [`${file}: ${page} "${id}" (no such heading)`];
      return [];
    });
  });
  expect(stale).toEqual([]);
});

test('every page opens with one title, then says who it is for, and never skips a heading level', () => {
  const wrong = pages.flatMap((page) => {
    const lines = prose(page);
    const levels = lines.flatMap((line) => /^(#{1,6}) /.exec(line)?.[1]?.length ?? []);
    const jumps = levels.flatMap((level, i) =>
      i > 0 && level > (levels[i - 1] as number) + 1
        ? [`${page}: heading level ${level} after ${levels[i - 1]}`]
        : [],
    );
    const opening = lines.slice(1).find((line) => line.trim() !== '') ?? '';
    const forWhom =
      page === 'README.md' ||
      page === 'BENCHMARKS.md' ||
      page === 'CHANGELOG.md' ||
      /^For /.test(opening)
        ? []
        : [`${page}: the first sentence does not say who the page is for ("For ...")`];
    return [
      ...(levels[0] === 1 && levels.filter((l) => l === 1).length === 1
        ? []
        : [`${page}: not one title`]),
      ...jumps,
      ...forWhom,
    ];
  });
  expect(wrong).toEqual([]);
});

test('every backticked path of src/, lua/, test/ and kit/ in the README and docs exists', () => {
  const missing = ['README.md', 'server/README.md', ...docs].flatMap((page) =>
    prose(page).flatMap((line) =>
      [...line.matchAll(/`((?:src|lua|test|kit)\/[\w./-]*)`/g)]
        .map(([, path]) => path as string)
        .filter((path) => !existsSync(join(repo, path)))
        .map((path) => `${page}: ${path}`),
    ),
  );
  expect(missing).toEqual([]);
});
