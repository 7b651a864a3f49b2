import { randomUUID } from 'node:crypto';

import { concurrencyWorkers, type Workers } from '../support/concurrency-workers';
import { startCluster, type TestCluster } from '../support/cluster';
import { sleep, waitFor } from '../support/processes';
import { redisUrl, uniquePrefix } from '../support/redis';

/*
 * CONCURRENCY across processes, on the built library: 20 simultaneous slow calls (300 ms each)
 * for a limit of 3 from two processes, on one Redis and on a 3-master Cluster. The resolvers
 * count themselves in Redis, so "running at once" is Redis' own count, never a clock's.
 */

let workers: Workers;
afterEach(() => workers.stop());

const exactlyThreeAtOnce = async (where: Record<string, string>) => {
  workers = concurrencyWorkers();
  const env = {
    ...where,
    RATE_LIMIT_PREFIX: uniquePrefix(),
    RUNNING_KEY: `running-${randomUUID()}`,
    LIMIT: '3',
    LEASE: '2',
    HOLD_MS: '300',
  };
  const [a, b] = await Promise.all([workers.start(env), workers.start(env)]);
  if (!a || !b) throw new Error('two workers');
  for (let round = 0; round < 2; round++) {
    // 20 calls at once, 10 per process: 3 run, 17 are refused at once
    const outcomes = (await Promise.all([a.go(10), b.go(10)])).flat();
    const counted: Record<string, number> = {};
    for (const o of outcomes) counted[o] = (counted[o] ?? 0) + 1;
    expect(counted).toEqual({ ok: 3, RATE_LIMITED: 17 });
    // and once they end, their slots are free: the next round runs 3 again
  }
  expect(workers.started).toBe(6);
  expect(workers.most).toBe(3);
};

test('two processes on one Redis: at most 3 of 20 simultaneous calls run, and 3 more once they end', async () => {
  await exactlyThreeAtOnce({ REDIS_URL: redisUrl() });
});

test('a process killed (SIGKILL) mid-call frees its slot within the lease time', async () => {
  workers = concurrencyWorkers();
  const env = {
    REDIS_URL: redisUrl(),
    RATE_LIMIT_PREFIX: uniquePrefix(),
    RUNNING_KEY: `running-${randomUUID()}`,
    LIMIT: '1',
    LEASE: '1',
    HOLD_MS: '10',
  };
  const [doomed, other] = await Promise.all([workers.start(env), workers.start(env)]);
  if (!doomed || !other) throw new Error('two workers');
  void doomed.go(1, { hang: true });
  await waitFor('the call to start', () => workers.started === 1);
  // held well past a lease: the slot is renewed while its call runs
  await sleep(1_500);
  expect(await other.go(1)).toEqual(['RATE_LIMITED']);
  doomed.kill();
  const killedAt = performance.now();
  await waitFor('the slot to be free', async () => (await other.go(1))[0] === 'ok', 5_000, 20);
  // renewed at most a third of a lease before the kill, so it expires within one lease of it
  expect(performance.now() - killedAt).toBeLessThanOrEqual(1_000 + 250);
});

describe('a 3-master Cluster', () => {
  let cluster: TestCluster;
  beforeAll(async () => {
    cluster = await startCluster();
  }, 60_000);
  afterAll(() => cluster?.stop());

  test('two processes: at most 3 of 20 simultaneous calls run, and 3 more once they end', async () => {
    await exactlyThreeAtOnce({ REDIS_CLUSTER_NODES: cluster.spec });
  });
});
