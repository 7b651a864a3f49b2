import { startCtfServer, type CtfServer } from '../../server/src/app';
import { ctfData } from '../support/ctf';
import { errorCodes, postGraphQL } from '../support/http';
import { closeClients, connectRedis, uniquePrefix } from '../support/redis';
import { openedRedisStore } from '../support/stores';

/*
 * The reference server's budget: 1,000 points a minute per caller, `@listSize` on
 * `challenges(first:)`, and what the page reads back in `extensions.cost`.
 */

const BOARD = '{ me { name score } challenges { id title points solved } }';
let server: CtfServer;

beforeAll(async () => {
  const store = await openedRedisStore({ client: await connectRedis(), prefix: uniquePrefix() });
  server = await startCtfServer({ data: ctfData(3), store, port: 0 });
});
afterAll(async () => {
  await server.stop();
  await closeClients();
});

test("the team page's board is priced at 51 and costs what came back: the team and one challenge", async () => {
  const started = performance.now();
  const first = await postGraphQL(server.url, BOARD, 'token-0');
  // a point comes back every 60 ms: a request slower than that (a loaded machine) finds more
  const refilled = Math.floor((performance.now() - started) / 60);
  const cost = first.body.extensions?.cost as { throttleStatus: Record<string, number> };
  expect(cost).toEqual({
    requestedQueryCost: 51,
    actualQueryCost: 2,
    throttleStatus: {
      maximumAvailable: 1000,
      currentlyAvailable: expect.any(Number),
      restoreRate: 1000 / 60,
    },
  });
  // 51 taken and 49 refunded: 998, and what time refilled since the take
  expect(cost.throttleStatus.currentlyAvailable).toBeGreaterThanOrEqual(998);
  expect(cost.throttleStatus.currentlyAvailable).toBeLessThanOrEqual(
    Math.min(1000, 998 + refilled),
  );
  const second = await postGraphQL(server.url, BOARD, 'token-0');
  const status = (second.body.extensions?.cost as { throttleStatus: Record<string, number> })
    .throttleStatus;
  // two more points spent; the second or so between the two may have refilled some
  expect(status.currentlyAvailable).toBeGreaterThanOrEqual(996);
  expect(status.currentlyAvailable).toBeLessThanOrEqual(1000);
});

test('more than a minute of points at once is refused before anything runs', async () => {
  const r = await postGraphQL(server.url, '{ challenges(first: 1001) { id } }', 'token-1');
  expect(errorCodes(r)).toEqual(['COST_ESTIMATED_TOO_EXPENSIVE']);
  expect(r.body.errors?.[0]?.extensions).toMatchObject({ cost: 1001, limit: 1000 });
  // the read limit was not asked: the field never ran
  const reads = await postGraphQL(server.url, '{ me { id } }', 'token-1');
  expect(reads.body.extensions?.rateLimit).toMatchObject({ read: { remaining: 599 } });
});

test('introspection and __typename cost nothing, so they need no token', async () => {
  const r = await postGraphQL(server.url, '{ __schema { queryType { name } } __typename }');
  expect(r.body.errors).toBeUndefined();
  expect(r.body.extensions?.cost).toMatchObject({ requestedQueryCost: 0, actualQueryCost: 0 });
});

test('bad variables and a negative first are the client’s errors, never store errors', async () => {
  const byVariable = 'query ($n: Int!) { challenges(first: $n) { id } }';
  for (const n of [2.5, 1e308]) {
    const r = await postGraphQL(server.url, byVariable, 'token-2', { n });
    expect(r.body.errors?.[0]?.message).toMatch(/^Variable "\$n" got invalid value/);
    expect(r.body.extensions?.cost).toBeUndefined();
  }
  const negative = await postGraphQL(server.url, '{ challenges(first: -1) { id } }', 'token-2');
  expect(errorCodes(negative)).toEqual(['COST_QUERY_PARSE_FAILURE']);
  const metrics = await (await fetch(server.url.replace('/graphql', '/metrics'))).text();
  expect(metrics).not.toMatch(/^graphql_rate_limit_store_errors_total\{/m);
  // nothing was taken: the team's budget is whole
  const board = await postGraphQL(server.url, '{ me { id } }', 'token-2');
  expect(board.body.extensions?.cost).toMatchObject({
    throttleStatus: { currentlyAvailable: 999 },
  });
});
