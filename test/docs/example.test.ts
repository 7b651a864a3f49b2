import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/*
 * The README's Example is examples/quick-start.ts, byte for byte. The package test compiles that
 * file against the packed package and runs it against Redis, so the README cannot drift into code
 * that does not run as pasted.
 */

const repo = join(__dirname, '..', '..');

test('the README example is examples/quick-start.ts, byte for byte', () => {
  const readme = readFileSync(join(repo, 'README.md'), 'utf8');
  const example = readme.slice(readme.indexOf('\n## Example\n'));
  const block = /^```ts\n([\s\S]*?)^```$/m.exec(example)?.[1];
  expect(block).toBe(readFileSync(join(repo, 'examples', 'quick-start.ts'), 'utf8'));
});

test('the example handles a missing Redis: an error listener, and the memory store named', () => {
  const example = readFileSync(join(repo, 'examples', 'quick-start.ts'), 'utf8');
  // ioredis prints "Unhandled error event" for every failed reconnect of a client without one
  expect(example).toMatch(/\.on\('error', /);
  expect(example).toMatch(/No Redis\? `store: createMemoryStore\(\)`/);
  // identify is written out, not left to a default that reads context.team?.id
  expect(example).toMatch(/^ {2}identify: \(context\) => /m);
});
