import { CLIENT_FAMILIES, type ClientFamily } from '../support/clients';
import { startCluster, type TestCluster } from '../support/cluster';
import { fire, IDENTITIES_SDL } from '../support/identities';
import { stopAll } from '../support/processes';
import { redisUrl, uniquePrefix } from '../support/redis';
import { startLimitedServer, type ServerProcess } from '../support/servers';

/*
 * Two processes, each with a store on a client of one family (its own connections), share
 * limits exactly: on one Redis and on a three-master Cluster, for every family the store accepts.
 */

let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startCluster();
}, 60_000);
afterAll(async () => {
  await stopAll();
  await cluster?.stop();
});

const passed = (results: { data?: Record<string, unknown> | null }[], field: string): number =>
  results.filter((r) => r.data?.[field] === true).length;

/** Two processes on `where`, through `family`, sharing one key prefix. */
async function pair(
  family: ClientFamily,
  where: Record<string, string>,
): Promise<readonly ServerProcess[]> {
  const env = { ...where, REDIS_CLIENT: family, RATE_LIMIT_PREFIX: uniquePrefix() };
  return Promise.all([
    startLimitedServer(IDENTITIES_SDL, env),
    startLimitedServer(IDENTITIES_SDL, env),
  ]);
}

describe.each(CLIENT_FAMILIES)('%s', (family: ClientFamily) => {
  test('one Redis: exactly 3 of 40 simultaneous logins for one email over two processes', async () => {
    const servers = await pair(family, { REDIS_URL: redisUrl() });
    const results = await fire(
      servers,
      40,
      () => 'mutation { login(email: "a@example.com") }',
      (i) => ({ 'x-ip': `10.1.0.${i}` }),
    );
    expect(passed(results, 'login')).toBe(3);
    await Promise.all(servers.map((s) => s.stop()));
  }, 30_000);

  test('Cluster: exactly 2 per user and 7 in all over two processes, identities on several masters', async () => {
    const servers = await pair(family, { REDIS_CLUSTER_NODES: cluster.spec });
    // 3 users x 10 hits: each user passes 2 (6 in all), the site keeps 1
    const first = await fire(
      servers,
      30,
      () => 'mutation { sendInvite }',
      (i) => ({ 'x-team': `user-${i % 3}` }),
    );
    expect(passed(first, 'sendInvite')).toBe(6);
    const second = await fire(
      servers,
      10,
      () => 'mutation { sendInvite }',
      (i) => ({ 'x-team': `late-${i}` }),
    );
    expect(passed(second, 'sendInvite')).toBe(1);
    // 40 logins from one IP for 40 emails spread over the masters: the IP allows 5
    const logins = await fire(
      servers,
      40,
      (i) => `mutation { login(email: "u${i}@example.com") }`,
      () => ({ 'x-ip': '10.2.0.1' }),
    );
    expect(passed(logins, 'login')).toBe(5);
    await Promise.all(servers.map((s) => s.stop()));
  }, 30_000);
});
