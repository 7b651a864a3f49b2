import { createRedisStore } from '../src';
import { startCtfServer, type CtfServer } from '../src/server/app';
import { releaseTogether } from './support/barrier';
import { ctfData } from './support/ctf';
import { errorCodes, httpClient, postGraphQL, SUBMIT, type GraphQLResponse } from './support/http';
import { closeClients, connectRedis, uniquePrefix } from './support/redis';

/*
 * submitFlag's second limit, site-wide: 600 a minute whoever submits, so that a flood from many
 * teams, each within its own three, cannot swamp flag checking. Its own file: the flood spends
 * the whole site's minute.
 */

const SITE_LIMIT = 600; // schema/ctf.graphql: @rateLimit(action: "submit-site", ..., by: "global")
const TEAM_LIMIT = 3;
const FLOODING = 210; // 630 attempts, every team within its own limit
const CLIENTS = 10;

let server: CtfServer;

beforeAll(async () => {
  const store = createRedisStore({ client: await connectRedis(), prefix: uniquePrefix() });
  // A flood of 630 requests in one process can hold a Redis reply past the default 250 ms, and
  // a hit that times out may still have been counted: this file is about the limit, not timeouts.
  server = await startCtfServer({ data: ctfData(FLOODING + 1), store, port: 0, timeoutMs: 5_000 });
});
afterAll(async () => {
  await server.stop();
  await closeClients();
});

test('one submission reports both limits; the team one is the headline', async () => {
  const r = await postGraphQL(server.url, SUBMIT, `token-${FLOODING}`, { c: 'c1', f: 'x' });
  expect(r.body.extensions?.rateLimit).toEqual({
    submit: { limit: TEAM_LIMIT, remaining: TEAM_LIMIT - 1, reset: expect.any(Number) },
    'submit-site': { limit: SITE_LIMIT, remaining: SITE_LIMIT - 1, reset: expect.any(Number) },
  });
  expect(r.headers.get('ratelimit-policy')).toBe('"submit";q=3;w=60');
});

test(`${FLOODING} teams sending 3 each at once: exactly ${SITE_LIMIT} in all are checked`, async () => {
  const jobs = Array.from({ length: FLOODING * TEAM_LIMIT }, (_, i) => i % FLOODING);
  const results = await releaseTogether(CLIENTS, async (c) => {
    const client = httpClient();
    const mine = jobs.filter((_, i) => i % CLIENTS === c);
    return async () => {
      try {
        return await Promise.all(
          mine.map((team) => client.post(server.url, SUBMIT, `token-${team}`, { c: 'c1', f: 'x' })),
        );
      } finally {
        await client.close();
      }
    };
  });
  const all: GraphQLResponse[] = results.flat();
  // The earlier test's one submission took a unit of the site's minute.
  const passed = all.filter((r) => r.body.data?.submitFlag);
  expect(passed).toHaveLength(SITE_LIMIT - 1);
  const refused = all.filter((r) => !r.body.data?.submitFlag);
  expect(refused).toHaveLength(FLOODING * TEAM_LIMIT - SITE_LIMIT + 1);
  for (const r of refused) {
    expect(errorCodes(r)).toEqual(['RATE_LIMITED']);
    expect(r.body.errors?.[0]?.extensions).toMatchObject({ action: 'submit-site', limit: 600 });
  }

  // The site refused the last team's next attempt without spending its own: it still has two.
  const last = `token-${FLOODING}`;
  const blocked = await postGraphQL(server.url, SUBMIT, last, { c: 'c1', f: 'x' });
  expect(blocked.body.errors?.[0]?.extensions).toMatchObject({ action: 'submit-site' });
  const status = await postGraphQL(server.url, '{ rateLimits { action remaining } }', last);
  expect(status.body.data?.rateLimits).toContainEqual({
    action: 'submit',
    remaining: TEAM_LIMIT - 1,
  });
});
