import { startCtfServer, type CtfServer } from '../../server/src/app';
import { checkCtfData, type CtfData } from '../../server/src/data';
import { ctfData } from '../support/ctf';
import { errorCodes, postGraphQL, SUBMIT, type GraphQLResponse } from '../support/http';
import { closeClients, connectRedis, uniquePrefix } from '../support/redis';
import { openedRedisStore } from '../support/stores';

/*
 * The reference server's operators' controls: `Query.rateLimits`, an admin's `resetRateLimit`,
 * and the list whose cost is its size, against one in-process server on a real Redis. Each test
 * spends the limits of its own team.
 */

const ADMIN = 'admin-token';
const CHALLENGES = 5;
const data: CtfData = {
  ...ctfData(5),
  challenges: Array.from({ length: CHALLENGES }, (_, i) => ({
    id: `c${i + 1}`,
    title: `Challenge ${i + 1}`,
    points: 100,
    flag: 'CTF{ok}',
  })),
  admins: [{ id: 'ops', token: ADMIN }],
};

// server/schema/ctf.graphql
const READ_LIMIT = 600;
const STATUS_LIMIT = 120;
const DEFAULT_FIRST = 50;

const LIMITS = '{ rateLimits { action limit window remaining resetIn } }';
const RESET = 'mutation ($t: ID!, $a: String!) { resetRateLimit(teamId: $t, action: $a) }';

let server: CtfServer;

beforeAll(async () => {
  const store = await openedRedisStore({ client: await connectRedis(), prefix: uniquePrefix() });
  server = await startCtfServer({ data, store, port: 0 });
});
afterAll(async () => {
  await server.stop();
  await closeClients();
});

const post = (query: string, token?: string, variables?: Record<string, unknown>) =>
  postGraphQL(server.url, query, token, variables);

interface Status {
  action: string;
  limit: number;
  window: number;
  remaining: number;
  resetIn: number;
}

async function limitsOf(token: string): Promise<Record<string, Status>> {
  const r = await post(LIMITS, token);
  expect(r.body.errors).toBeUndefined();
  const list = r.body.data?.rateLimits as Status[];
  return Object.fromEntries(list.map((s) => [s.action, s]));
}

const readsLeft = (r: GraphQLResponse): unknown =>
  (r.body.extensions?.rateLimit as Record<string, { remaining: number }> | undefined)?.read
    ?.remaining;

describe('Query.rateLimits', () => {
  test('a fresh team sees its reads and attempts whole, and only those', async () => {
    const r = await post(LIMITS, 'token-0');
    expect(r.body.data?.rateLimits).toEqual([
      { action: 'read', limit: READ_LIMIT, window: 60, remaining: READ_LIMIT, resetIn: 0 },
      { action: 'export', limit: 2, window: 30, remaining: 2, resetIn: 0 },
      { action: 'submit', limit: 3, window: 60, remaining: 3, resetIn: 0 },
    ]);
  });

  test('it reports a submission and counts nothing on what it reports', async () => {
    await post(SUBMIT, 'token-0', { c: 'c1', f: 'CTF{no}' });
    const first = await limitsOf('token-0');
    expect(first.submit?.remaining).toBe(2);
    expect(first.submit?.resetIn).toBeGreaterThanOrEqual(1);
    expect(first.submit?.resetIn).toBeLessThanOrEqual(60);
    const again = await limitsOf('token-0');
    expect(again.submit?.remaining).toBe(2);
    expect(again.read?.remaining).toBe(first.read?.remaining);
    // A read after both looks has spent exactly one unit: the looks spent none.
    expect(readsLeft(await post('{ me { id } }', 'token-0'))).toBe(
      (first.read?.remaining as number) - 1,
    );
  });

  test.each([
    ['no token', undefined],
    ['an unknown token', 'not-a-team'],
    ['an admin token (an admin is no team)', ADMIN],
  ])('%s: UNAUTHENTICATED', async (_, token) => {
    const r = await post(LIMITS, token);
    expect(errorCodes(r)).toEqual(['UNAUTHENTICATED']);
  });

  test(`a team out of reads still sees when they come back; looking has its own budget of ${STATUS_LIMIT}`, async () => {
    const spent = await post(`{ challenges(first: ${READ_LIMIT}) { id } }`, 'token-3');
    expect(spent.body.errors).toBeUndefined();
    expect(readsLeft(spent)).toBe(0);
    expect(errorCodes(await post('{ me { id } }', 'token-3'))).toEqual(['RATE_LIMITED']);

    const seen = await limitsOf('token-3');
    expect(seen.read).toMatchObject({ remaining: 0, limit: READ_LIMIT });
    expect(seen.read?.resetIn).toBeGreaterThanOrEqual(1);

    // At most 15 aliases a request (the server's bound): the rest of the minute's looks.
    const looks = (n: number) =>
      `{ ${Array.from({ length: n }, (_, i) => `a${i}: rateLimits { remaining }`).join(' ')} }`;
    for (let used = 1; used < STATUS_LIMIT; used += 15) {
      const r = await post(looks(Math.min(15, STATUS_LIMIT - used)), 'token-3');
      expect(r.body.errors).toBeUndefined();
    }
    const blocked = await post(LIMITS, 'token-3');
    expect(errorCodes(blocked)).toEqual(['RATE_LIMITED']);
    expect(blocked.body.errors?.[0]?.extensions).toMatchObject({
      action: 'status',
      limit: STATUS_LIMIT,
    });
    // Another team's looks are its own.
    expect((await limitsOf('token-4')).read?.remaining).toBe(READ_LIMIT);
  });
});

describe('a list costs its size: challenges(first)', () => {
  test('first: 2 returns two and costs two reads; omitted, it costs the default', async () => {
    const before = readsLeft(await post('{ me { id } }', 'token-1')) as number;
    const two = await post('{ challenges(first: 2) { id } }', 'token-1');
    expect(two.body.data?.challenges).toEqual([{ id: 'c1' }, { id: 'c2' }]);
    expect(readsLeft(two)).toBe(before - 2);
    const all = await post('{ challenges { id } }', 'token-1');
    expect(all.body.data?.challenges).toHaveLength(CHALLENGES);
    expect(readsLeft(all)).toBe(before - 2 - DEFAULT_FIRST);
    const none = await post('{ challenges(first: 0) { id } }', 'token-1');
    expect(none.body.data?.challenges).toEqual([]);
    expect(readsLeft(none)).toBe(before - 2 - DEFAULT_FIRST - 1);
  });

  test('more than the read limit could ever allow: RATE_LIMIT_COST_EXCEEDED, nothing counted', async () => {
    const before = (await limitsOf('token-1')).read?.remaining;
    const r = await post(`{ challenges(first: ${READ_LIMIT + 1}) { id } }`, 'token-1');
    expect(errorCodes(r)).toEqual(['RATE_LIMIT_COST_EXCEEDED']);
    expect(r.body.errors?.[0]?.extensions).toMatchObject({
      action: 'read',
      limit: READ_LIMIT,
      cost: READ_LIMIT + 1,
    });
    expect((await limitsOf('token-1')).read?.remaining).toBe(before);
  });

  test('a negative or null size is refused', async () => {
    // the budget refuses a negative slicing value before any resolver runs
    expect(errorCodes(await post('{ challenges(first: -1) { id } }', 'token-1'))).toEqual([
      'COST_QUERY_PARSE_FAILURE',
    ]);
    // Non-null: a null that would cost one read cannot stand for the default 50.
    expect(errorCodes(await post('{ challenges(first: null) { id } }', 'token-1'))).toEqual([
      'GRAPHQL_VALIDATION_FAILED',
    ]);
  });
});

describe('Mutation.resetRateLimit', () => {
  test("an admin makes a blocked team's attempts whole again", async () => {
    for (let i = 0; i < 3; i++) await post(SUBMIT, 'token-2', { c: 'c1', f: 'CTF{no}' });
    expect(errorCodes(await post(SUBMIT, 'token-2', { c: 'c1', f: 'CTF{no}' }))).toEqual([
      'RATE_LIMITED',
    ]);
    expect((await limitsOf('token-2')).submit?.remaining).toBe(0);

    const reset = await post(RESET, ADMIN, { t: 'team-2', a: 'submit' });
    expect(reset.body.errors).toBeUndefined();
    expect(reset.body.data).toEqual({ resetRateLimit: true });
    expect((await limitsOf('token-2')).submit).toMatchObject({ remaining: 3, resetIn: 0 });
    // This process's memory of the block went with it: the next attempt is checked.
    const next = await post(SUBMIT, 'token-2', { c: 'c1', f: 'CTF{ok}' });
    expect(next.body.data).toEqual({ submitFlag: { correct: true } });
  });

  test.each([
    ['no token', 'UNAUTHENTICATED', undefined],
    ['an unknown token', 'UNAUTHENTICATED', 'not-a-token'],
    ["a team's token", 'FORBIDDEN', 'token-4'],
  ])('%s: %s, and nothing is reset', async (_, code, token) => {
    await post(SUBMIT, 'token-4', { c: 'c1', f: 'CTF{no}' });
    const before = (await limitsOf('token-4')).submit?.remaining;
    const r = await post(RESET, token, { t: 'team-4', a: 'submit' });
    expect(errorCodes(r)).toEqual([code]);
    // no token: the operation is refused before it runs (no caller to charge), so no data
    expect(r.body.data ?? null).toBeNull();
    expect((await limitsOf('token-4')).submit?.remaining).toBe(before);
  });

  test.each([
    ['an unknown team', 'team-99', 'submit', /No team with id "team-99"/],
    ['an unknown action', 'team-4', 'sumbit', /No team limit named "sumbit".*"submit"/],
    ['the site-wide limit, which is no team limit', 'team-4', 'submit-site', /"submit-site"/],
  ])('%s: BAD_USER_INPUT that says so', async (_, team, action, message) => {
    const r = await post(RESET, ADMIN, { t: team, a: action });
    expect(errorCodes(r)).toEqual(['BAD_USER_INPUT']);
    expect(r.body.errors?.[0]?.message).toMatch(message);
  });
});

describe('admins in the data file', () => {
  test('an admin token may not be a team token, nor an admin id repeated', () => {
    const base = ctfData(1);
    expect(() => checkCtfData({ ...base, admins: [{ id: 'a', token: 'token-0' }] })).toThrow(
      'admins[0]: token already used by a team or another admin',
    );
    expect(() =>
      checkCtfData({
        ...base,
        admins: [
          { id: 'a', token: 'x' },
          { id: 'a', token: 'y' },
        ],
      }),
    ).toThrow('admins[1]: duplicate id "a"');
    expect(() => checkCtfData({ ...base, admins: {} })).toThrow('"admins" must be an array');
    expect(checkCtfData(base).admins).toBeUndefined();
  });
});
