import { createRedisStore } from '../../src';
import { startCtfServer, type CtfServer } from '../../server/src/app';
import { releaseTogether } from '../support/barrier';
import { ctfData } from '../support/ctf';
import {
  errorCodes,
  httpClient,
  postGraphQL,
  SUBMISSIONS,
  SUBMIT,
  type GraphQLResponse,
} from '../support/http';
import { closeClients, connectRedis, keysUnder, uniquePrefix } from '../support/redis';

const CLIENTS = 4;
const REQUESTS_PER_CLIENT = 3;
const LIMIT = 3; // server/schema/ctf.graphql: @rateLimit(action: "submit", window: 60, limit: 3)

let server: CtfServer;
let prefix: string;

beforeEach(async () => {
  prefix = uniquePrefix();
  const client = await connectRedis({ enableOfflineQueue: false });
  server = await startCtfServer({
    data: ctfData(3),
    store: createRedisStore({ client, prefix }),
    port: 0,
  });
});
afterEach(() => server.stop());
afterAll(closeClients);

/** Fires CLIENTS x REQUESTS_PER_CLIENT submissions for `token` at one instant from separate clients. */
async function burst(token: string): Promise<GraphQLResponse[]> {
  const results = await releaseTogether(CLIENTS, async () => {
    const client = httpClient();
    return async () => {
      try {
        return await Promise.all(
          Array.from({ length: REQUESTS_PER_CLIENT }, () =>
            client.post(server.url, SUBMIT, token, { c: 'c1', f: 'CTF{no}' }),
          ),
        );
      } finally {
        await client.close();
      }
    };
  });
  return results.flat();
}

const passed = (rs: GraphQLResponse[]) => rs.filter((r) => r.body.data?.submitFlag);

test('parallel submitFlag from several clients: exactly 3 pass per team, the resolver runs 3 times', async () => {
  const first = await burst('token-0');
  expect(passed(first)).toHaveLength(LIMIT);
  const blocked = first.filter((r) => errorCodes(r)[0] === 'RATE_LIMITED');
  expect(blocked).toHaveLength(CLIENTS * REQUESTS_PER_CLIENT - LIMIT);
  for (const r of blocked) {
    expect(r.status).toBe(200);
    expect(r.body.errors?.[0]?.extensions).toMatchObject({
      action: 'submit',
      limit: 3,
      window: 60,
    });
  }

  // team-1 was untouched by team-0's burst: it has its whole budget
  const second = await burst('token-1');
  expect(passed(second)).toHaveLength(LIMIT);

  for (const token of ['token-0', 'token-1']) {
    const me = await postGraphQL(server.url, SUBMISSIONS, token);
    expect(me.body.data).toEqual({ me: { submissions: LIMIT } });
  }
  const me2 = await postGraphQL(server.url, SUBMISSIONS, 'token-2');
  expect(me2.body.data).toEqual({ me: { submissions: 0 } });
});

test('a correct flag is recognised, a wrong one is not', async () => {
  const wrong = await postGraphQL(server.url, SUBMIT, 'token-0', { c: 'c1', f: 'CTF{ok' });
  expect(wrong.body.data).toEqual({ submitFlag: { correct: false } });
  const right = await postGraphQL(server.url, SUBMIT, 'token-0', { c: 'c1', f: 'CTF{ok}' });
  expect(right.body.data).toEqual({ submitFlag: { correct: true } });
});

test('aliases in one mutation are each counted: the 4th alias is blocked', async () => {
  const aliases = Array.from(
    { length: 6 },
    (_, i) => `a${i}: submitFlag(challengeId: "c1", flag: "x") { correct }`,
  );
  const result = await postGraphQL(server.url, `mutation { ${aliases.join(' ')} }`, 'token-0');
  // submitFlag is non-null: the blocked alias nulls the operation and stops the serial execution
  expect(errorCodes(result)).toEqual(['RATE_LIMITED']);
  expect(result.body.errors?.[0]?.message).toMatch(/submit/);
  const me = await postGraphQL(server.url, SUBMISSIONS, 'token-0');
  expect(me.body.data).toEqual({ me: { submissions: LIMIT } });
});

describe('missing or unknown token: UNAUTHENTICATED, nothing counted', () => {
  test.each([
    ['no Authorization header', undefined],
    ['an unknown token', 'not-a-team'],
    ['an empty token', ''],
  ])('%s', async (_, token) => {
    const result = await postGraphQL(server.url, SUBMIT, token, { c: 'c1', f: 'x' });
    expect(errorCodes(result)).toEqual(['UNAUTHENTICATED']);
    const admin = await connectRedis();
    expect(await keysUnder(admin, prefix)).toEqual([]);
  });
});
