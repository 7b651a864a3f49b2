import { fetch } from 'undici';

import { releaseTogether } from '../support/barrier';
import { ctfData, writeCtfData } from '../support/ctf';
import {
  httpClient,
  postGraphQL,
  SUBMISSIONS,
  SUBMIT,
  type GraphQLResponse,
} from '../support/http';
import { freePort, stopAll } from '../support/processes';
import { redisUrl, uniquePrefix } from '../support/redis';
import { startServerProcess, type ServerProcess } from '../support/servers';

const TEAMS = 5;
const HITS_PER_TEAM = 12;
const LIMIT = 3;

let servers: ServerProcess[] = [];

beforeAll(async () => {
  const env = {
    REDIS_URL: redisUrl(),
    RATE_LIMIT_PREFIX: uniquePrefix(),
    CTF_DATA: writeCtfData(ctfData(TEAMS)),
  };
  servers = await Promise.all([startServerProcess(env), startServerProcess(env)]);
}, 30_000);
afterAll(stopAll);

test('two server processes on one Redis let exactly `limit` through per team in total', async () => {
  // One client per (team, server): every team's hits are split evenly between the processes.
  const jobs = servers.flatMap((server) =>
    Array.from({ length: TEAMS }, (_, team) => ({ server, team })),
  );
  const results = await releaseTogether(jobs.length, async (i) => {
    const { server, team } = jobs[i] as (typeof jobs)[number];
    const client = httpClient();
    return async () => {
      try {
        const hits = Array.from({ length: HITS_PER_TEAM / servers.length }, () =>
          client.post(server.url, SUBMIT, `token-${team}`, { c: 'c1', f: 'nope' }),
        );
        return { team, responses: await Promise.all(hits) };
      } finally {
        await client.close();
      }
    };
  });

  for (let team = 0; team < TEAMS; team++) {
    const responses: GraphQLResponse[] = results
      .filter((r) => r.team === team)
      .flatMap((r) => r.responses);
    expect(responses).toHaveLength(HITS_PER_TEAM);
    expect(responses.filter((r) => r.body.data?.submitFlag)).toHaveLength(LIMIT);

    // the resolvers of both processes together ran exactly `limit` times for the team
    const counts = await Promise.all(
      servers.map((s) => postGraphQL(s.url, SUBMISSIONS, `token-${team}`)),
    );
    const total = counts.reduce(
      (sum, r) => sum + ((r.body.data?.me as { submissions: number }).submissions ?? 0),
      0,
    );
    expect(total).toBe(LIMIT);
  }
});

test('a server whose Redis is down starts anyway, answers RATE_LIMIT_UNAVAILABLE and reports /health 503', async () => {
  const dead = `redis://127.0.0.1:${await freePort()}`;
  const server = await startServerProcess({ REDIS_URL: dead, CTF_DATA: writeCtfData(ctfData(1)) });
  const health = await fetch(server.url.replace('/graphql', '/health'));
  expect(health.status).toBe(503);
  expect(await health.json()).toEqual({ status: 'degraded', store: 'down' });
  const result = await postGraphQL(server.url, SUBMIT, 'token-0', { c: 'c1', f: 'x' });
  expect(result.body.errors?.[0]?.extensions?.code).toBe('RATE_LIMIT_UNAVAILABLE');
  await server.stop();
  expect(server.child.output()).toMatch(/"msg":"rate limit store failed"/);
});
