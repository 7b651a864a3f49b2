import { releaseTogether } from './support/barrier';
import { ctfData, writeCtfData } from './support/ctf';
import { httpClient, postGraphQL, SUBMISSIONS, SUBMIT, type GraphQLResponse } from './support/http';
import { stopAll } from './support/processes';
import { redisUrl, uniquePrefix } from './support/redis';
import { startServerProcess, type ServerProcess } from './support/servers';

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
