import { createRedisStore, RateLimitConfigError, type RateLimitRule } from '../../src';
import { openStoreConnection } from '../../src/stores/redis/clients';
import type { StoreConnection } from '../../src/stores/redis/clients/adapter';
import type { PackedHit } from '../../src/stores/redis/hit-script';
import {
  checkingVersion,
  parseRedisVersion,
  serverVersions,
  versionProblem,
  type Version,
} from '../../src/stores/redis/server-version';
import { startCluster } from '../support/cluster';
import { closeClients, connectRedis, uniquePrefix, waitFor } from '../support/redis';

/*
 * The store reads the server's version when it first sends a hit, and refuses what the server
 * cannot run with one error naming server, version and what is missing.
 */

afterAll(closeClients);

const rule = (algorithm: RateLimitRule['algorithm']): RateLimitRule => ({
  action: 'a',
  algorithm,
  windowSeconds: 60,
  limit: 3,
  cost: 1,
});

const info = (version: string) =>
  `# Server\r\nredis_version:${version}\r\nredis_git_sha1:00000000\r\nredis_mode:standalone\r\n`;

test.each([
  ['7.0.15', [7, 0, 15]],
  ['6.2', [6, 2, 0]],
  ['255.255.255', [255, 255, 255]],
])('INFO with redis_version:%s reads as %j', (version, expected) => {
  expect(parseRedisVersion(info(version))).toEqual(expected);
});

test('INFO without a redis_version reads as nothing', () => {
  expect(parseRedisVersion('# Server\r\nredis_mode:standalone\r\n')).toBeUndefined();
});

test.each<[string, RateLimitRule['algorithm'], RegExp | undefined]>([
  [
    '6.0.16',
    'SLIDING_WINDOW',
    /^Redis at db:6379 is version 6\.0\.16: SLIDING_WINDOW needs Redis 6\.2\.0 or later \(ZRANGE with REV and BYSCORE\)/,
  ],
  ['6.0.16', 'FIXED_WINDOW', undefined],
  ['6.0.16', 'TOKEN_BUCKET', undefined],
  ['6.2.0', 'SLIDING_WINDOW', undefined],
  ['7.0.15', 'SLIDING_WINDOW', undefined],
  [
    '4.0.14',
    'FIXED_WINDOW',
    /^Redis at db:6379 is version 4\.0\.14: the rate limit scripts need Redis 5\.0\.0/,
  ],
])('a Redis %s and %s: %p', (version, algorithm, refusal) => {
  const servers = [{ server: 'db:6379', version: parseRedisVersion(info(version)) as Version }];
  const problem = versionProblem(servers, [algorithm]);
  if (refusal) expect(problem).toMatch(refusal);
  else expect(problem).toBeUndefined();
});

test('on a Cluster the oldest master is named', () => {
  const servers = [
    { server: 'a:7000', version: [7, 2, 0] as Version },
    { server: 'b:7001', version: [6, 0, 9] as Version },
  ];
  expect(versionProblem(servers, ['SLIDING_WINDOW'])).toMatch(
    /^Redis at b:7001 is version 6\.0\.9/,
  );
});

test('a server too old for SLIDING_WINDOW: its hits are refused before any is sent, the others pass', async () => {
  const sent: PackedHit[] = [];
  const server = {
    isCluster: false,
    masters: () => [{ address: 'old-redis:6380', send: async () => info('6.0.16') }],
  } as unknown as StoreConnection;
  const queueHit = checkingVersion(
    server,
    async (hit) => {
      sent.push(hit);
      return { allowed: true, limits: [] };
    },
    200,
  );
  const sliding = { kind: 'hit' as const, identity: 'i', rules: [rule('SLIDING_WINDOW')] };
  const fixed = { kind: 'hit' as const, identity: 'i', rules: [rule('FIXED_WINDOW')] };
  const first = queueHit(sliding);
  await expect(first).rejects.toThrow(RateLimitConfigError);
  await expect(first).rejects.toThrow(
    'Redis at old-redis:6380 is version 6.0.16: SLIDING_WINDOW needs Redis 6.2.0 or later',
  );
  await expect(queueHit(fixed)).resolves.toMatchObject({ allowed: true });
  await expect(
    queueHit({ kind: 'hit', identity: 'i', rules: [rule('FIXED_WINDOW'), rule('SLIDING_WINDOW')] }),
  ).rejects.toThrow(/SLIDING_WINDOW needs Redis 6\.2\.0/);
  expect(sent).toEqual([fixed]);
});

test('a real Redis 7 passes the check: every algorithm is decided', async () => {
  const client = await connectRedis();
  const version = parseRedisVersion(await client.info('server')) as Version;
  expect(version[0]).toBeGreaterThanOrEqual(7);
  const store = createRedisStore({ client, prefix: uniquePrefix() });
  for (const algorithm of ['SLIDING_WINDOW', 'FIXED_WINDOW', 'TOKEN_BUCKET'] as const) {
    expect(await store.hit('id', [rule(algorithm)])).toMatchObject({
      allowed: true,
      limits: [{ remaining: 2 }],
    });
  }
});

test('on a real Cluster, the version of every master is read, and SLIDING_WINDOW passes', async () => {
  const cluster = await startCluster();
  try {
    const client = await cluster.connect();
    const connection = openStoreConnection(client);
    connection.open();
    await waitFor('the Cluster to be ready', () => connection.isReady());
    const servers = await serverVersions(connection);
    await connection.close();
    expect(servers).toHaveLength(client.nodes('master').length);
    expect(servers.length).toBeGreaterThanOrEqual(3);
    for (const { server, version } of servers) {
      expect(server).toMatch(/:\d+$/);
      expect(version[0]).toBeGreaterThanOrEqual(7);
    }
    expect(versionProblem(servers, ['SLIDING_WINDOW'])).toBeUndefined();
    const store = createRedisStore({ client, prefix: uniquePrefix() });
    expect(await store.hit('id', [rule('SLIDING_WINDOW')])).toMatchObject({ allowed: true });
  } finally {
    await cluster.stop();
  }
}, 60_000);
