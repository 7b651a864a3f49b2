import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { makeExecutableSchema } from '@graphql-tools/schema';

import { createMemoryStore, rateLimitDirective, WARNING_CODES } from '../../src';
import { run } from '../support/schema';

/*
 * docs/troubleshooting.md goes from each error code and each warning code to its causes and
 * fixes: every member of RateLimitErrorCode has a heading under "Error codes", every value of
 * WARNING_CODES one under "Warnings", and no heading names a code that no longer exists.
 */

const repo = join(__dirname, '..', '..');
const page = readFileSync(join(repo, 'docs', 'troubleshooting.md'), 'utf8');

/** The `### \`CODE\`` headings of the `## <title>` section. */
function codesUnder(title: string): string[] {
  const section = page.slice(page.indexOf(`\n## ${title}\n`)).split(/\n## /)[1] ?? '';
  return [...section.matchAll(/^### `([A-Z_]+)`$/gm)].map(([, code]) => code as string).sort();
}

test('every error code of RateLimitErrorCode has its causes and fixes', () => {
  const errors = readFileSync(join(repo, 'src', 'errors.ts'), 'utf8');
  const union = /export type RateLimitErrorCode =([^;]+);/.exec(errors)?.[1] ?? '';
  const codes = [...union.matchAll(/'([A-Z_]+)'/g)].map(([, code]) => code as string).sort();
  expect(codes.length).toBeGreaterThanOrEqual(8);
  expect(codesUnder('Error codes')).toEqual(codes);
});

test('every warning code has its causes and fixes', () => {
  expect(codesUnder('Warnings')).toEqual(Object.values(WARNING_CODES).sort());
});

test('"no transformer and no plugin": a schema never transformed limits nothing, as the page says', async () => {
  expect(page).toContain('- **No transformer and no plugin**');
  const { typeDefs, rules } = rateLimitDirective({
    store: createMemoryStore(),
    identify: () => 'caller',
  });
  const schema = makeExecutableSchema({
    typeDefs: [typeDefs, 'type Query { go: Int @rateLimit(action: "go", window: 60, limit: 1) }'],
    resolvers: { Query: { go: () => 1 } },
  });
  const results = await Promise.all([1, 2, 3].map(() => run(schema, '{ go }')));
  expect(results.map((r) => r.data?.go)).toEqual([1, 1, 1]);
  expect(rules().size).toBe(0);
});
