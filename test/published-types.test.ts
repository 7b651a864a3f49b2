import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

import { Cluster as ValkeyCluster, Redis as Valkey } from 'iovalkey';
import { Cluster, Redis } from 'ioredis';
import { createClient, createCluster } from 'redis';
import { createClient as createClient5, createCluster as createCluster5 } from 'redis5';

import { createRedisStore } from '../src';

/*
 * The published declarations name no server package: the Apollo and envelop plugins' types are
 * spelled out, so a consumer of one server compiles without the other installed (the package
 * test compiles a consumer that has @apollo/server but no envelop or Yoga package). Nor any
 * Redis client package: the store's client type is structural, so an application compiles with
 * the one client it uses (ioredis, iovalkey or node-redis) and no other.
 */

const dist = join(__dirname, '..', 'dist');
// the two required peers
const ALLOWED = new Set(['graphql', '@graphql-tools/utils']);

function declarations(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'server' ? [] : declarations(path);
    return entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

test('the published .d.ts files import only graphql, @graphql-tools/utils and each other', () => {
  const files = declarations(dist);
  expect(files.map((f) => relative(dist, f))).toEqual(
    expect.arrayContaining(['index.d.ts', 'envelop-plugin.d.ts', 'plugin.d.ts']),
  );
  const foreign = files.flatMap((file) =>
    [...readFileSync(file, 'utf8').matchAll(/(?:from |import\()'([^'.][^']*)'/g)]
      .map((m) => m[1] as string)
      .filter((name) => !ALLOWED.has(name))
      .map((name) => `${relative(dist, file)} imports ${name}`),
  );
  expect(foreign).toEqual([]);
});

test("createRedisStore's `client` takes each client family's own types", () => {
  // compiled, not run: a family whose type the published one refused would fail the build
  const stores = [
    () => createRedisStore({ client: new Redis() }),
    () => createRedisStore({ client: new Cluster([]) }),
    () => createRedisStore({ client: new Valkey() }),
    () => createRedisStore({ client: new ValkeyCluster([]) }),
    () => createRedisStore({ client: createClient() }),
    () => createRedisStore({ client: createCluster({ rootNodes: [] }) }),
    () => createRedisStore({ client: createClient5() }),
    () => createRedisStore({ client: createCluster5({ rootNodes: [] }) }),
  ];
  expect(stores).toHaveLength(8);
});
