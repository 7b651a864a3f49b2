import { fetch } from 'undici';

import { startCtfServer, type CtfServer } from '../../server/src/app';
import { ctfData } from '../support/ctf';
import { errorCodes, postGraphQL } from '../support/http';
import { closeClients, connectRedis, uniquePrefix } from '../support/redis';
import { openedRedisStore } from '../support/stores';

/*
 * The reference server's slow query: `exportScoreboard`, at most 2 running at once per team
 * (server/schema/ctf.graphql), refused with reason CONCURRENCY and counted by reason in /metrics.
 */

const EXPORT = '{ exportScoreboard }';

let server: CtfServer;

beforeAll(async () => {
  const store = await openedRedisStore({ client: await connectRedis(), prefix: uniquePrefix() });
  server = await startCtfServer({ data: ctfData(3), store, port: 0 });
});
afterAll(async () => {
  await server.stop();
  await closeClients();
});

test('3 simultaneous exports of one team: 2 run, 1 is refused for concurrency; then 2 run again', async () => {
  const first = await Promise.all(
    Array.from({ length: 3 }, () => postGraphQL(server.url, EXPORT, 'token-0')),
  );
  expect(first.filter((r) => typeof r.body.data?.exportScoreboard === 'string')).toHaveLength(2);
  const refused = first.find((r) => errorCodes(r)[0] === 'RATE_LIMITED');
  expect(refused?.body.errors?.[0]?.extensions).toMatchObject({
    action: 'export',
    limit: 2,
    window: 30,
    reason: 'CONCURRENCY',
  });
  expect(refused?.headers.get('retry-after')).toMatch(/^\d+$/);
  // another team has slots of its own, and the first team's are free once its exports end
  const next = await Promise.all([
    postGraphQL(server.url, EXPORT, 'token-0'),
    postGraphQL(server.url, EXPORT, 'token-0'),
    postGraphQL(server.url, EXPORT, 'token-1'),
  ]);
  expect(next.map((r) => errorCodes(r))).toEqual([[], [], []]);
  const metrics = await (await fetch(server.url.replace('/graphql', '/metrics'))).text();
  expect(metrics).toContain(
    'graphql_rate_limit_refusals_total{action="export",reason="CONCURRENCY"} 1',
  );
});
