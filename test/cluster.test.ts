import calculateSlot from 'cluster-key-slot';

import { createRedisStore, type RateLimitRule } from '../src';
import { counterKey } from '../src/keys';
import { releaseTogether } from './support/barrier';
import { startCluster, type TestCluster } from './support/cluster';
import { ctfData, writeCtfData } from './support/ctf';
import { httpClient, postGraphQL, SUBMISSIONS, SUBMIT } from './support/http';
import { stopAll } from './support/processes';
import { uniquePrefix } from './support/redis';
import { startServerProcess } from './support/servers';

let cluster: TestCluster;

beforeAll(async () => {
  cluster = await startCluster();
}, 60_000);
afterAll(async () => {
  await stopAll();
  await cluster?.stop();
});

const TEAMS = 50;
const HITS = 8;
const wide: RateLimitRule = {
  action: 'wide',
  algorithm: 'SLIDING_WINDOW',
  windowSeconds: 60,
  limit: 5,
  cost: 1,
};
const narrow: RateLimitRule = {
  action: 'narrow',
  algorithm: 'FIXED_WINDOW',
  windowSeconds: 60,
  limit: 3,
  cost: 1,
};

test('50 teams across slots, two limits on one field: each team gets exactly the smaller limit', async () => {
  const prefix = uniquePrefix();
  const teams = Array.from({ length: TEAMS }, (_, i) => `team-${i}`);
  // the teams' keys really are spread over the three masters' slots
  const slots = new Set(teams.map((t) => calculateSlot(counterKey(prefix, t, narrow))));
  expect(slots.size).toBeGreaterThan(40);

  const results = await releaseTogether(10, async (worker) => {
    const store = createRedisStore({ client: await cluster.connect(), prefix });
    const mine = teams.filter((_, i) => i % 10 === worker);
    return () =>
      Promise.all(
        mine.flatMap((team) =>
          Array.from({ length: HITS }, async () => ({
            team,
            allowed: (await store.hit(team, [wide, narrow])).allowed,
          })),
        ),
      );
  });
  const hits = results.flat();
  expect(hits).toHaveLength(TEAMS * HITS);
  for (const team of teams) {
    expect(hits.filter((h) => h.team === team && h.allowed)).toHaveLength(3);
  }
  // nothing was consumed by the blocked hits: every team has 2 units of `wide` left
  const store = createRedisStore({ client: await cluster.connect(), prefix });
  for (const team of teams.slice(0, 5)) {
    const d = await store.hit(team, [wide]);
    expect(d).toMatchObject({ allowed: true, limits: [{ remaining: 1 }] });
  }
});

test('two server processes on REDIS_CLUSTER_NODES share each team limit exactly', async () => {
  const teams = 6;
  const env = {
    REDIS_CLUSTER_NODES: cluster.spec,
    RATE_LIMIT_PREFIX: uniquePrefix(),
    CTF_DATA: writeCtfData(ctfData(teams)),
  };
  const servers = await Promise.all([startServerProcess(env), startServerProcess(env)]);
  const jobs = servers.flatMap((server) =>
    Array.from({ length: teams }, (_, team) => ({ server, team })),
  );
  const results = await releaseTogether(jobs.length, async (i) => {
    const { server, team } = jobs[i] as (typeof jobs)[number];
    const client = httpClient();
    return async () => {
      try {
        const responses = await Promise.all(
          Array.from({ length: 5 }, () =>
            client.post(server.url, SUBMIT, `token-${team}`, { c: 'c1', f: 'x' }),
          ),
        );
        return { team, passed: responses.filter((r) => r.body.data?.submitFlag).length };
      } finally {
        await client.close();
      }
    };
  });
  for (let team = 0; team < teams; team++) {
    const passed = results.filter((r) => r.team === team).reduce((sum, r) => sum + r.passed, 0);
    expect(passed).toBe(3);
    const counts = await Promise.all(
      servers.map((s) => postGraphQL(s.url, SUBMISSIONS, `token-${team}`)),
    );
    const ran = counts.reduce(
      (sum, r) => sum + (r.body.data?.me as { submissions: number }).submissions,
      0,
    );
    expect(ran).toBe(3);
  }
  await Promise.all(servers.map((s) => s.stop()));
}, 60_000);
