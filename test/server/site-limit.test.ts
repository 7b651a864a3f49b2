import { createRedisStore, type RateLimitRule, type RateLimitStore } from '../../src';
import { startCtfServer, type CtfServer } from '../../server/src/app';
import { releaseTogether } from '../support/barrier';
import { ctfData } from '../support/ctf';
import { errorCodes, httpClient, postGraphQL, SUBMIT, type GraphQLResponse } from '../support/http';
import { closeClients, connectRedis, uniquePrefix } from '../support/redis';

/*
 * submitFlag's second limit, site-wide: 600 a minute whoever submits, so that a flood from many
 * teams, each within its own three, cannot swamp flag checking. Its own file: the test spends
 * the whole site's minute.
 */

const SITE_LIMIT = 600;
const TEAM_LIMIT = 3;
const TEAMS = 9;
const SPARE = 10;

// server/schema/ctf.graphql: @rateLimit(action: "submit-site", window: 60, limit: 600, by: "global"),
// with identities: { global: () => 'all' }: the rule the directive builds from it.
const SITE: RateLimitRule = {
  action: 'submit-site',
  algorithm: 'FIXED_WINDOW',
  windowSeconds: 60,
  limit: SITE_LIMIT,
  cost: 1,
  by: 'global',
};

let server: CtfServer;
let store: RateLimitStore;

beforeAll(async () => {
  store = createRedisStore({ client: await connectRedis(), prefix: uniquePrefix() });
  server = await startCtfServer({ data: ctfData(TEAMS), store, port: 0 });
});
afterAll(async () => {
  await server.stop();
  await closeClients();
});

const LAST = `token-${TEAMS - 1}`;

test('one submission reports both limits; the team one is the headline', async () => {
  const r = await postGraphQL(server.url, SUBMIT, LAST, { c: 'c1', f: 'x' });
  expect(r.body.extensions?.rateLimit).toEqual({
    submit: { limit: TEAM_LIMIT, remaining: TEAM_LIMIT - 1, reset: expect.any(Number) },
    'submit-site': { limit: SITE_LIMIT, remaining: SITE_LIMIT - 1, reset: expect.any(Number) },
  });
  expect(r.headers.get('ratelimit-policy')).toBe('"submit";q=3;w=60');
});

test(`teams each within their own three, at once: the site lets exactly its last ${SPARE} through`, async () => {
  // The rest of the site's minute goes in one hit, as if hundreds of teams had submitted.
  const spent = await store.hit('all', [SITE], [SITE_LIMIT - 1 - SPARE]);
  expect(spent).toMatchObject({ allowed: true, limits: [{ remaining: SPARE }] });

  const flooding = TEAMS - 1;
  const results = await releaseTogether(flooding, async (team) => {
    const client = httpClient();
    return async () => {
      try {
        return await Promise.all(
          Array.from({ length: TEAM_LIMIT }, () =>
            client.post(server.url, SUBMIT, `token-${team}`, { c: 'c1', f: 'x' }),
          ),
        );
      } finally {
        await client.close();
      }
    };
  });
  const all: GraphQLResponse[] = results.flat();
  expect(all.filter((r) => r.body.data?.submitFlag)).toHaveLength(SPARE);
  const refused = all.filter((r) => !r.body.data?.submitFlag);
  expect(refused).toHaveLength(flooding * TEAM_LIMIT - SPARE);
  for (const r of refused) {
    expect(errorCodes(r)).toEqual(['RATE_LIMITED']);
    expect(r.body.errors?.[0]?.extensions).toMatchObject({ action: 'submit-site', limit: 600 });
  }

  // The site refused the last team's next attempt without spending its own: it still has two.
  const blocked = await postGraphQL(server.url, SUBMIT, LAST, { c: 'c1', f: 'x' });
  expect(blocked.body.errors?.[0]?.extensions).toMatchObject({ action: 'submit-site' });
  const status = await postGraphQL(server.url, '{ rateLimits { action remaining } }', LAST);
  expect(status.body.data?.rateLimits).toContainEqual({
    action: 'submit',
    remaining: TEAM_LIMIT - 1,
  });
});
