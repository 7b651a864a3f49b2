import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { minVersion, satisfies } from 'semver';

/*
 * `npm ci` on the oldest Node that our `engines` admits installs with no EBADENGINE warning:
 * every package the lock file pins accepts that Node. The lock (v3) records each package's
 * `engines`, so this reads it instead of installing.
 */

interface LockEntry {
  version?: string;
  engines?: { node?: string } | string[];
}

const repo = join(__dirname, '..', '..');
const readJson = (file: string): unknown => JSON.parse(readFileSync(join(repo, file), 'utf8'));
const manifest = readJson('package.json') as { engines: { node: string } };
const lock = readJson('package-lock.json') as {
  lockfileVersion: number;
  packages: Record<string, LockEntry>;
};

/** The node range of an entry, as npm checks it: the legacy array form is not checked. */
const nodeRange = (entry: LockEntry): string | undefined =>
  Array.isArray(entry.engines) ? undefined : entry.engines?.node;

test('the lock file records engines, and ours name a lowest Node', () => {
  expect(lock.lockfileVersion).toBeGreaterThanOrEqual(3);
  expect(minVersion(manifest.engines.node)?.major).toBe(20);
  expect(Object.values(lock.packages).filter((entry) => nodeRange(entry)).length).toBeGreaterThan(
    10,
  );
});

test('every locked package accepts the lowest Node our engines admit', () => {
  const lowest = minVersion(manifest.engines.node)?.version ?? 'none';
  const refusing = Object.entries(lock.packages).flatMap(([path, entry]) => {
    const range = nodeRange(entry);
    // npm's own engine check admits prereleases the same way
    return range && !satisfies(lowest, range, { includePrerelease: true })
      ? [`${path.replace(/^.*node_modules\//, '')}@${entry.version} wants node ${range}`]
      : [];
  });
  expect(refusing).toEqual([]);
});

test("the README's Node 20 pins are the versions the lock file installs", () => {
  const readme = readFileSync(join(repo, 'README.md'), 'utf8');
  const [, block = '{}'] = /```json\n"overrides": (\{[^`]*\})\n```/.exec(readme) ?? [];
  const overrides = JSON.parse(block) as Record<string, string>;
  const [, command = ''] = /^npm install graphql-atomic-rate-limit (.*)$/m.exec(readme) ?? [];
  const installed = Object.fromEntries(
    command
      .split(' ')
      .filter((p) => p.startsWith('@graphql-tools/'))
      .map((p) => [p.slice(0, p.lastIndexOf('@')), p.slice(p.lastIndexOf('@') + 1)]),
  );
  expect(Object.keys(overrides)).toEqual(['@graphql-tools/utils', '@graphql-tools/merge']);
  expect(Object.keys(installed)).toEqual(['@graphql-tools/utils', '@graphql-tools/schema']);
  for (const [name, version] of Object.entries({ ...overrides, ...installed })) {
    expect(`${name}@${lock.packages[`node_modules/${name}`]?.version}`).toBe(`${name}@${version}`);
  }
});
