import { join } from 'node:path';

import { getIntrospectionQuery } from 'graphql';
import { fetch } from 'undici';

import { readServerConfig } from '../../server/src/config';
import { tlsHint } from '../../server/src/redis-url';
import { ctfData, writeCtfData } from '../support/ctf';
import { errorCodes, postGraphQL, type GraphQLResponse } from '../support/http';
import { startProcess, stopAll, waitFor, within, type Child } from '../support/processes';
import {
  closeClients,
  connectRedis,
  redisUrl,
  startRedisServer,
  uniquePrefix,
  type RedisProcess,
} from '../support/redis';
import { startServerProcess, type ServerProcess } from '../support/servers';

/*
 * The reference server's settings as `npm start` reads them: where Redis is (refused at start
 * with one line when it cannot work), whose address `by: "ip"` counts (TRUST_PROXY), and
 * whether introspection answers (GRAPHQL_INTROSPECTION).
 */

const MAIN = join(__dirname, '..', '..', 'server', 'dist', 'main.js');
const ADMIN = 'admin-token';
const DATA = writeCtfData({ ...ctfData(2), admins: [{ id: 'root', token: ADMIN }] });

let redis: RedisProcess;

beforeAll(async () => {
  redis = await startRedisServer();
});
afterAll(async () => {
  // clients first: a client of a Redis already stopped would keep reconnecting
  await closeClients();
  await stopAll();
});

/** Runs the server with `env` until it exits on its own; its exit code and output lines. */
async function exitOf(
  env: Record<string, string>,
): Promise<{ code: number | null; lines: string[] }> {
  const child: Child = startProcess(process.execPath, [MAIN], {
    env: { ...process.env, PORT: '0', CTF_DATA: DATA, ...env },
  });
  const code = await within(
    child.exited.then((exit) => exit.code),
    15_000,
    'the server to exit',
  );
  return { code, lines: child.output().trim().split('\n') };
}

describe('REDIS_URL that cannot work: one line, exit code 1', () => {
  test.concurrent.each([
    [
      'http://127.0.0.1:6379',
      'REDIS_URL must start with redis:// (or rediss:// for TLS), got "http://127.0.0.1:6379"',
    ],
    [
      'localhost:6379',
      'REDIS_URL must start with redis:// (or rediss:// for TLS), got "localhost:6379"',
    ],
    ['not a url', 'REDIS_URL must be a URL like redis://host:6379/0, got "not a url"'],
    [
      'redis://127.0.0.1:6379/db1',
      'REDIS_URL must end with a database index from 0 to 2147483647 (or none), got "/db1"',
    ],
    ['redis://127.0.0.1:6379/-1', 'REDIS_URL must end with a database index'],
  ])('%s', async (url, message) => {
    const { code, lines } = await exitOf({ REDIS_URL: url });
    expect(code).toBe(1);
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0] as string)).toMatchObject({
      level: 'error',
      msg: 'CTF server failed to start',
      error: expect.stringContaining(message),
    });
  });

  test('a password in a URL that is refused is not logged', async () => {
    const { code, lines } = await exitOf({ REDIS_URL: 'http://user:s3cret@127.0.0.1:6379' });
    expect(code).toBe(1);
    expect(lines.join('\n')).not.toContain('s3cret');
    expect(lines[0]).toContain('http://***@127.0.0.1:6379');
  });

  test('a database index this Redis does not have (SELECT refused) stops it before it serves', async () => {
    const { code, lines } = await exitOf({ REDIS_URL: `${redis.url}/99` });
    expect(code).toBe(1);
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0] as string)).toMatchObject({
      level: 'error',
      msg: 'CTF server failed to start',
      error: expect.stringMatching(/^REDIS_URL names database 99, which this Redis refuses: ERR/),
    });
  });

  describe('a Redis that requires a password', () => {
    let guarded: RedisProcess;
    beforeAll(async () => {
      guarded = await startRedisServer(undefined, { args: ['--requirepass', 'right-s3cret'] });
    });
    afterAll(() => guarded.stop());

    test.each([
      [
        'a wrong one',
        ':wrong-s3cret@',
        /^Redis refuses the user or password that REDIS_URL gives \(WRONGPASS\)/,
      ],
      ['a wrong user', 'nobody:right-s3cret@', /\(WRONGPASS\)/],
      ['none', '', /^Redis requires a password \(NOAUTH\) that REDIS_URL does not give$/],
    ])(
      'given %s: it stops before it serves, with one line and no password',
      async (_, auth, error) => {
        const { code, lines } = await exitOf({
          REDIS_URL: guarded.url.replace('redis://', `redis://${auth}`),
        });
        expect(code).toBe(1);
        expect(lines).toHaveLength(1);
        expect(JSON.parse(lines[0] as string)).toMatchObject({
          level: 'error',
          msg: 'CTF server failed to start',
          error: expect.stringMatching(error),
        });
        expect(lines.join('\n')).not.toContain('s3cret');
      },
    );

    test('given the right one, it serves', async () => {
      const server = await startServerProcess({
        REDIS_URL: guarded.url.replace('redis://', 'redis://:right-s3cret@'),
        CTF_DATA: DATA,
        RATE_LIMIT_PREFIX: uniquePrefix(),
      });
      // /health answers 503 `starting` while the store sets itself up: ask until it is past that
      const health = () => fetch(`${server.url.replace(/\/graphql$/, '')}/health`);
      let status = 0;
      try {
        await waitFor('the store to be set up', async () => {
          const response = await health();
          status = response.status;
          const body = (await response.json()) as { status?: string };
          return body.status !== 'starting';
        });
      } finally {
        await server.stop();
      }
      expect(status).toBe(200);
    });
  });

  test.concurrent.each([['127.0.0.1'], ['127.0.0.1:0'], ['127.0.0.1:6379,:6380'], ['a:70000']])(
    'REDIS_CLUSTER_NODES=%s',
    async (nodes) => {
      const { code, lines } = await exitOf({ REDIS_CLUSTER_NODES: nodes });
      expect(code).toBe(1);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain('REDIS_CLUSTER_NODES must be host:port,host:port');
    },
  );
});

test('a database index it has is used: the counters live there', async () => {
  const prefix = uniquePrefix();
  const server = await startServerProcess({
    REDIS_URL: `${redis.url}/3`,
    RATE_LIMIT_PREFIX: prefix,
    CTF_DATA: DATA,
  });
  const r = await postGraphQL(server.url, '{ me { id } }', 'token-0');
  expect(r.body.data).toEqual({ me: { id: 'team-0' } });
  await server.stop();
  const keysIn = async (db: number): Promise<string[]> => {
    const client = await connectRedis({ db }, redis.url);
    return client.keys(`${prefix}*`);
  };
  expect(await keysIn(0)).toEqual([]);
  expect((await keysIn(3)).length).toBeGreaterThan(0);
});

test('rediss:// to a Redis without TLS: it serves with the policy and the warning hints at TLS', async () => {
  const server = await startServerProcess({
    REDIS_URL: redis.url.replace('redis://', 'rediss://'),
    CTF_DATA: DATA,
  });
  await server.stop();
  const warning = server.child
    .output()
    .split('\n')
    .find((l) => l.includes('Redis not reachable yet'));
  expect(JSON.parse(warning as string)).toMatchObject({
    level: 'warn',
    hint: 'rediss:// asks for TLS: if this Redis does not speak TLS, use redis://',
  });
});

test('tlsHint: a TLS port answering redis:// (reset, or a TLS record), a plain one answering rediss://', () => {
  const useTls = 'if this Redis requires TLS, use rediss://';
  const noTls = 'rediss:// asks for TLS: if this Redis does not speak TLS, use redis://';
  expect(tlsHint('redis://h:6380', new Error('read ECONNRESET'))).toBe(useTls);
  expect(
    tlsHint('redis://h:6380', new Error('Protocol error, got "\\u0015" as reply type byte')),
  ).toBe(useTls);
  expect(tlsHint('redis://h:6379', new Error('connect ECONNREFUSED 127.0.0.1:6379'))).toBe(
    undefined,
  );
  expect(tlsHint('rediss://h:6379', new Error('no answer within 3000 ms'))).toBe(noTls);
  expect(
    tlsHint(
      'rediss://h:6379',
      new Error('Client network socket disconnected before secure TLS connection was established'),
    ),
  ).toBe(noTls);
});

describe('TRUST_PROXY: whose X-Forwarded-For names the client that by: "ip" counts', () => {
  const RESET = 'mutation { resetRateLimit(teamId: "team-0", action: "submit") }';

  /** `resetRateLimit` counts per address (`reset-ip`): what is left after this request. */
  async function resetFrom(url: string, forwardedFor: string): Promise<number> {
    const response = await fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${ADMIN}`,
        'x-forwarded-for': forwardedFor,
      },
      body: JSON.stringify({ query: RESET }),
    });
    const body = (await response.json()) as GraphQLResponse['body'];
    expect(body.data).toEqual({ resetRateLimit: true });
    const limits = body.extensions?.rateLimit as Record<string, { remaining: number }>;
    return limits['reset-ip']?.remaining as number;
  }

  const servers: ServerProcess[] = [];
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
  });

  test('by default a forged X-Forwarded-For changes nothing: every request counts on the socket address', async () => {
    const server = await startServerProcess({
      REDIS_URL: redisUrl(),
      RATE_LIMIT_PREFIX: uniquePrefix(),
      CTF_DATA: DATA,
    });
    servers.push(server);
    const left = [];
    for (let i = 0; i < 5; i++) left.push(await resetFrom(server.url, `203.0.113.${i}`));
    expect(left).toEqual([29, 28, 27, 26, 25]);
  });

  test('TRUST_PROXY=1 (one proxy in front): the address the proxy appended is counted', async () => {
    const server = await startServerProcess({
      REDIS_URL: redisUrl(),
      RATE_LIMIT_PREFIX: uniquePrefix(),
      CTF_DATA: DATA,
      TRUST_PROXY: '1',
    });
    servers.push(server);
    const left = [];
    // a proxy appends the address it saw: a client's own forged entries stay to its left
    for (let i = 0; i < 3; i++) left.push(await resetFrom(server.url, `6.6.6.6, 198.51.100.${i}`));
    left.push(await resetFrom(server.url, '7.7.7.7, 198.51.100.0'));
    expect(left).toEqual([29, 29, 29, 28]);
  });

  test('readServerConfig: false, a hop count or addresses; true is refused', () => {
    expect(readServerConfig({}).trustProxy).toBe(false);
    expect(readServerConfig({ TRUST_PROXY: 'false' }).trustProxy).toBe(false);
    expect(readServerConfig({ TRUST_PROXY: '2' }).trustProxy).toBe(2);
    expect(readServerConfig({ TRUST_PROXY: 'loopback, 10.0.0.0/8, ::1' }).trustProxy).toEqual([
      'loopback',
      '10.0.0.0/8',
      '::1',
    ]);
    expect(() => readServerConfig({ TRUST_PROXY: 'true' })).toThrow(
      /^TRUST_PROXY must be false, a number of proxy hops .*got "true": true would let any client choose its address$/,
    );
    expect(() => readServerConfig({ TRUST_PROXY: '10.0.0.0/33' })).toThrow(
      /TRUST_PROXY must be .* got "10\.0\.0\.0\/33"$/,
    );
    expect(() => readServerConfig({ TRUST_PROXY: 'yes' })).toThrow(/TRUST_PROXY must be/);
  });
});

describe('introspection: one field per operation, or off', () => {
  const fifteen = `{ ${Array.from({ length: 15 }, (_, i) => `s${i}: __schema { types { name } }`).join(' ')} }`;

  test('by default one full introspection per operation runs; a second introspection field is refused before anything runs', async () => {
    const server = await startServerProcess({ CTF_DATA: DATA });
    const full = await postGraphQL(
      server.url,
      getIntrospectionQuery({ descriptions: true, directiveIsRepeatable: true }),
    );
    expect(full.body.errors).toBeUndefined();
    expect(full.body.data?.__schema).toBeDefined();
    for (const query of [
      fifteen,
      '{ a: __schema { queryType { name } } b: __schema { queryType { name } } }',
      '{ __schema { queryType { name } } __type(name: "Query") { name } }',
      '{ ...F a: __schema { queryType { name } } } fragment F on Query { __schema { queryType { name } } }',
    ]) {
      const refused = await postGraphQL(server.url, query);
      expect(refused.status).toBe(400);
      expect(errorCodes(refused)).toEqual(['GRAPHQL_VALIDATION_FAILED']);
      expect(refused.body.errors?.[0]?.message).toMatch(
        /^At most 1 introspection field \(__schema, __type\) per operation, got \d+$/,
      );
      expect(JSON.stringify(refused.body).length).toBeLessThan(1_000);
    }
    // the same field twice under one name is answered once: not a second one
    const merged = await postGraphQL(
      server.url,
      '{ __schema { queryType { name } } ...F } fragment F on Query { __schema { queryType { name } } }',
    );
    expect(merged.body.errors).toBeUndefined();
    await server.stop();
  });

  test('GRAPHQL_INTROSPECTION=false: __schema and __type are refused, __typename answers', async () => {
    const server = await startServerProcess({ CTF_DATA: DATA, GRAPHQL_INTROSPECTION: 'false' });
    for (const query of [getIntrospectionQuery(), '{ __type(name: "Query") { name } }']) {
      const refused = await postGraphQL(server.url, query);
      expect(refused.status).toBe(400);
      expect(errorCodes(refused)[0]).toBe('GRAPHQL_VALIDATION_FAILED');
    }
    const typename = await postGraphQL(server.url, '{ __typename }');
    expect(typename.body).toMatchObject({ data: { __typename: 'Query' } });
    await server.stop();
  });

  test('readServerConfig: true or false, default true', () => {
    expect(readServerConfig({}).introspection).toBe(true);
    expect(readServerConfig({ GRAPHQL_INTROSPECTION: 'false' }).introspection).toBe(false);
    expect(() => readServerConfig({ GRAPHQL_INTROSPECTION: 'no' })).toThrow(
      'GRAPHQL_INTROSPECTION must be "true" or "false", got "no"',
    );
  });
});
