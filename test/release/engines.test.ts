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

test("docs/getting-started.md's Node 20 pins are the versions the lock file installs", () => {
  const guide = readFileSync(join(repo, 'docs', 'getting-started.md'), 'utf8');
  const [, line = ''] = /^npm pkg set (.*)$/m.exec(guide) ?? [];
  const pins = [...line.matchAll(/'(dependencies|overrides)\.(@graphql-tools\/[a-z-]+)=([^']+)'/g)];
  const of = (kind: string): Record<string, string> =>
    Object.fromEntries(pins.filter((p) => p[1] === kind).map((p) => [p[2], p[3]]));
  const dependencies = of('dependencies');
  const overrides = of('overrides');
  expect(Object.keys(dependencies)).toEqual(['@graphql-tools/utils', '@graphql-tools/schema']);
  expect(overrides).toEqual({
    '@graphql-tools/utils': '$@graphql-tools/utils', // the dependency's own version, named once
    '@graphql-tools/merge': expect.any(String),
  });
  const versions = { ...dependencies, '@graphql-tools/merge': overrides['@graphql-tools/merge'] };
  for (const [name, version] of Object.entries(versions)) {
    expect(`${name}@${lock.packages[`node_modules/${name}`]?.version}`).toBe(`${name}@${version}`);
  }
});
