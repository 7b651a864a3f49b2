import { fetch } from 'undici';

import { releaseTogether } from '../support/barrier';
import { ctfData, writeCtfData } from '../support/ctf';
import { errorCodes, httpClient, postGraphQL, SUBMIT, type GraphQLResponse } from '../support/http';
import { freePort, stopAll } from '../support/processes';
import { startRedisServer, uniquePrefix } from '../support/redis';
import { startServerProcess, type ServerProcess } from '../support/servers';

/*
 * RATE_LIMIT_ON_STORE_ERROR=local: a server process whose Redis is down decides on an in-process
 * memory store, so that each team's three attempts a minute still hold (per process).
 */

const TEAMS = 3;
const HITS_PER_TEAM = 10;
const LIMIT = 3;

let server: ServerProcess;

beforeAll(async () => {
  server = await startServerProcess({
    REDIS_URL: `redis://127.0.0.1:${await freePort()}`,
    RATE_LIMIT_ON_STORE_ERROR: 'local',
    CTF_DATA: writeCtfData(ctfData(TEAMS)),
  });
});
afterAll(stopAll);

test(`Redis down: exactly ${LIMIT} of ${HITS_PER_TEAM} simultaneous submissions per team pass, decided by the fallback`, async () => {
  const health = await fetch(server.url.replace('/graphql', '/health'));
  expect(health.status).toBe(503);

  const results = await releaseTogether(TEAMS, async (team) => {
    const client = httpClient();
    return async () => {
      try {
        return await Promise.all(
          Array.from({ length: HITS_PER_TEAM }, () =>
            client.post(server.url, SUBMIT, `token-${team}`, { c: 'c1', f: 'x' }),
          ),
        );
      } finally {
        await client.close();
      }
    };
  });
  results.forEach((responses: GraphQLResponse[]) => {
    expect(responses.filter((r) => r.body.data?.submitFlag)).toHaveLength(LIMIT);
    const refused = responses.filter((r) => !r.body.data?.submitFlag);
    expect(refused.map((r) => errorCodes(r)[0])).toEqual(
      Array(HITS_PER_TEAM - LIMIT).fill('RATE_LIMITED'),
    );
  });

  const metrics = await (await fetch(server.url.replace('/graphql', '/metrics'))).text();
  expect(metrics).toContain(
    `graphql_rate_limit_decisions_total{action="submit",result="allowed",decided_by="fallback"} ${TEAMS * LIMIT}`,
  );
  expect(metrics).toContain(
    `graphql_rate_limit_decisions_total{action="submit",result="blocked",decided_by="fallback"} ${TEAMS * (HITS_PER_TEAM - LIMIT)}`,
  );
  expect(metrics).not.toMatch(/decided_by="store"/);
  expect(metrics).toContain(
    `graphql_rate_limit_store_errors_total{action="submit"} ${TEAMS * HITS_PER_TEAM}`,
  );
});

test('peek reads Redis only: rateLimits answers RATE_LIMIT_UNAVAILABLE meanwhile', async () => {
  const r = await postGraphQL(server.url, '{ rateLimits { action remaining } }', 'token-0');
  expect(errorCodes(r)).toEqual(['RATE_LIMIT_UNAVAILABLE']);
});

test('Redis lost mid-window: the fallback starts from what this process admitted, so a team still gets 3 in all, not 3 more', async () => {
  const redis = await startRedisServer();
  const local = await startServerProcess({
    REDIS_URL: redis.url,
    RATE_LIMIT_PREFIX: uniquePrefix(),
    RATE_LIMIT_ON_STORE_ERROR: 'local',
    CTF_DATA: writeCtfData(ctfData(2)),
  });
  const submit = () => postGraphQL(local.url, SUBMIT, 'token-0', { c: 'c1', f: 'x' });
  for (let i = 0; i < 2; i++)
    expect((await submit()).body.data).toEqual({ submitFlag: { correct: false } });
  await redis.stop();

  const answers = [];
  for (let i = 0; i < 5; i++) {
    const r = await submit();
    answers.push(r.body.data?.submitFlag ? 'passed' : errorCodes(r)[0]);
  }
  expect(answers).toEqual([
    'passed',
    'RATE_LIMITED',
    'RATE_LIMITED',
    'RATE_LIMITED',
    'RATE_LIMITED',
  ]);
  // another team, which Redis never saw, has its whole limit from the fallback
  const other = [];
  for (let i = 0; i < 4; i++) {
    const r = await postGraphQL(local.url, SUBMIT, 'token-1', { c: 'c1', f: 'x' });
    other.push(r.body.data?.submitFlag ? 'passed' : errorCodes(r)[0]);
  }
  expect(other).toEqual(['passed', 'passed', 'passed', 'RATE_LIMITED']);
  const metrics = await (await fetch(local.url.replace('/graphql', '/metrics'))).text();
  expect(metrics).toContain(
    'graphql_rate_limit_decisions_total{action="submit",result="allowed",decided_by="store"} 2',
  );
  expect(metrics).toContain(
    'graphql_rate_limit_decisions_total{action="submit",result="allowed",decided_by="fallback"} 4',
  );
  await local.stop();
});
