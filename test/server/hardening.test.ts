import { connect } from 'node:net';
import { join } from 'node:path';

import { getIntrospectionQuery } from 'graphql';
import { fetch } from 'undici';

import { readServerConfig, SERVER_DEFAULTS } from '../../server/src/config';
import { ctfData, writeCtfData } from '../support/ctf';
import { errorCodes, postGraphQL, type GraphQLResponse } from '../support/http';
import { startProcess, stopAll, within } from '../support/processes';
import { closeClients, connectRedis, keysUnder, redisUrl, uniquePrefix } from '../support/redis';
import { startServerProcess, type ServerProcess } from '../support/servers';

/*
 * The reference server against hostile input and misuse, as `npm start` runs it (built output,
 * NODE_ENV unset), started once for the file with short HTTP timeouts so that they can be seen.
 */

const MAIN = join(__dirname, '..', '..', 'server', 'dist', 'main.js');
const HEADERS_TIMEOUT_MS = 1_000;
const REQUEST_TIMEOUT_MS = 2_000;
const READ_LIMIT = 600; // server/schema/ctf.graphql: @rateLimit(action: "read", window: 60, limit: 600)
const MAX_ALIASES = 15; // server/src/query-limits.ts

let server: ServerProcess;
let origin: string;
let prefix: string;

beforeAll(async () => {
  prefix = uniquePrefix();
  server = await startServerProcess({
    REDIS_URL: redisUrl(),
    RATE_LIMIT_PREFIX: prefix,
    CTF_DATA: writeCtfData(ctfData(4)),
    HOST: '', // unset: the default address
    HTTP_HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
    HTTP_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
  });
  origin = new URL(server.url).origin;
});
afterAll(async () => {
  await stopAll();
  await closeClients();
});

const aliases = (n: number, field: string): string =>
  `{ ${Array.from({ length: n }, (_, i) => `a${i}: ${field}`).join(' ')} }`;

const readsLeft = (r: GraphQLResponse): unknown =>
  (r.body.extensions?.rateLimit as Record<string, { remaining: number }> | undefined)?.read
    ?.remaining;

describe('what one operation may ask for', () => {
  test('2,000 aliases of `challenges` are refused before anything runs, and count nothing', async () => {
    const before = readsLeft(await postGraphQL(server.url, '{ me { id } }', 'token-0'));
    const huge = await postGraphQL(
      server.url,
      aliases(2_000, 'challenges { id title points solved }'),
      'token-0',
    );
    expect(huge.status).toBe(400);
    expect(huge.body.data).toBeUndefined();
    expect(errorCodes(huge)).toEqual(['GRAPHQL_PARSE_FAILED']);
    expect(huge.body.errors?.[0]?.message).toMatch(/more tha[nt] 1000 tokens/);

    const over = await postGraphQL(
      server.url,
      aliases(MAX_ALIASES + 1, 'challenges { id }'),
      'token-0',
    );
    expect(over.status).toBe(400);
    expect(errorCodes(over)).toEqual(['GRAPHQL_VALIDATION_FAILED']);
    expect(over.body.errors?.[0]?.message).toMatch(/Aliases limit of 15 exceeded, found 16/);

    const deep = await postGraphQL(
      server.url,
      '{ __type(name: "Query") { fields { type { ofType { ofType { ofType { ofType { ofType { ofType { name } } } } } } } } } }',
      'token-0',
    );
    expect(errorCodes(deep)).toEqual(['GRAPHQL_VALIDATION_FAILED']);
    expect(deep.body.errors?.[0]?.message).toMatch(/Query depth limit of 8 exceeded/);

    const after = readsLeft(await postGraphQL(server.url, '{ me { id } }', 'token-0'));
    expect(after).toBe((before as number) - 1);
  });

  test('the limits leave room: the team page board, 15 aliases and full introspection run', async () => {
    const board = await postGraphQL(
      server.url,
      'query Board { me { name score } challenges { id title points solved } }',
      'token-1',
    );
    expect(board.body.errors).toBeUndefined();
    expect(board.body.data?.challenges).toHaveLength(1);
    const fifteen = await postGraphQL(server.url, aliases(MAX_ALIASES, 'me { id }'), 'token-1');
    expect(fifteen.body.errors).toBeUndefined();
    expect(Object.keys(fifteen.body.data ?? {})).toHaveLength(MAX_ALIASES);
    const introspection = await postGraphQL(
      server.url,
      getIntrospectionQuery({ descriptions: true, directiveIsRepeatable: true }),
    );
    expect(introspection.body.errors).toBeUndefined();
    expect(introspection.body.data?.__schema).toBeDefined();
  });

  test(`reads share a per-team limit of ${READ_LIMIT} a minute; other teams keep theirs`, async () => {
    const spend = aliases(MAX_ALIASES, 'me { id }');
    for (let spent = 0; spent < READ_LIMIT; spent += MAX_ALIASES) {
      const r = await postGraphQL(server.url, spend, 'token-2');
      expect(r.body.errors).toBeUndefined();
    }
    const blocked = await postGraphQL(server.url, '{ challenges { id } }', 'token-2');
    expect(errorCodes(blocked)).toEqual(['RATE_LIMITED']);
    expect(blocked.body.errors?.[0]?.extensions).toMatchObject({
      action: 'read',
      limit: READ_LIMIT,
      window: 60,
    });
    const other = await postGraphQL(server.url, '{ challenges { id } }', 'token-3');
    expect(other.body.errors).toBeUndefined();
  });

  test('reading without a team token is UNAUTHENTICATED and touches no counter', async () => {
    const admin = await connectRedis();
    // every counter and its value: a budget bucket full again may expire meanwhile, but no
    // counter may appear or change
    const counters = async (): Promise<Map<string, string | null>> => {
      const keys = await keysUnder(admin, prefix);
      return new Map(await Promise.all(keys.map(async (k) => [k, await admin.get(k)] as const)));
    };
    const before = await counters();
    expect(before.size).toBeGreaterThan(0);
    for (const token of [undefined, 'not-a-team']) {
      const r = await postGraphQL(server.url, '{ challenges { id } me { id } }', token);
      // Both fields are non-null: the first error nulls the operation, so one or two are reported.
      expect(errorCodes(r).length).toBeGreaterThan(0);
      expect(new Set(errorCodes(r))).toEqual(new Set(['UNAUTHENTICATED']));
    }
    for (const [key, value] of await counters()) {
      expect([key, before.has(key)]).toEqual([key, true]);
      // a key listed and then expired before its GET reads null: it left, it did not change
      if (value !== null) expect([key, value]).toEqual([key, before.get(key)]);
    }
  });
});

describe('bodies GraphQL never sees', () => {
  const post = (body: string) =>
    fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
      signal: AbortSignal.timeout(10_000),
    });

  test('bad JSON: 400 in GraphQL error shape; the body is neither echoed nor logged, the log is throttled', async () => {
    const guesses = Array.from({ length: 20 }, (_, i) => `{"query": CTF{secret-guess-${i}}`);
    const responses = await Promise.all(guesses.map(post));
    for (const response of responses) {
      expect(response.status).toBe(400);
      expect(response.headers.get('content-type')).toMatch(/^application\/json/);
      const text = await response.text();
      expect(text).not.toMatch(/secret-guess|<html|node_modules|\/dist\/|\bat /i);
      expect(JSON.parse(text)).toEqual({
        errors: [{ message: expect.any(String), extensions: { code: 'BAD_REQUEST' } }],
      });
    }
    const output = server.child.output();
    expect(output).not.toContain('secret-guess');
    const lines = output.split('\n').filter((l) => l.includes('request refused before GraphQL'));
    expect(lines.length).toBeGreaterThanOrEqual(1);
    expect(lines.length).toBeLessThan(guesses.length);
    expect(JSON.parse(lines[0] as string)).toMatchObject({
      level: 'warn',
      status: 400,
      code: 'BAD_REQUEST',
      type: 'entity.parse.failed',
    });
  });

  test('a 200 kB body: 413 PAYLOAD_TOO_LARGE in GraphQL error shape', async () => {
    const response = await post(JSON.stringify({ query: `{ me { id } } #${'x'.repeat(200_000)}` }));
    expect(response.status).toBe(413);
    expect(await response.json()).toEqual({
      errors: [{ message: expect.any(String), extensions: { code: 'PAYLOAD_TOO_LARGE' } }],
    });
  });
});

describe('headers', () => {
  test('the team page may not be framed, sniffed or leak its address', async () => {
    for (const path of ['/', '/app.js', '/style.css']) {
      const response = await fetch(`${origin}${path}`);
      expect(response.status).toBe(200);
      const csp = response.headers.get('content-security-policy') ?? '';
      expect(csp.split(/;\s*/)).toEqual(
        expect.arrayContaining([
          "default-src 'none'",
          "script-src 'self'",
          "connect-src 'self'",
          "frame-ancestors 'none'",
        ]),
      );
      expect(response.headers.get('x-frame-options')).toBe('DENY');
      expect(response.headers.get('x-content-type-options')).toBe('nosniff');
      expect(response.headers.get('referrer-policy')).toBe('no-referrer');
      await response.arrayBuffer();
    }
  });

  test('the API may not be framed or sniffed either', async () => {
    const r = await postGraphQL(server.url, '{ __typename }');
    expect(r.headers.get('content-security-policy')).toBe("frame-ancestors 'none'");
    expect(r.headers.get('x-frame-options')).toBe('DENY');
    expect(r.headers.get('x-content-type-options')).toBe('nosniff');
  });
});

describe('slow clients', () => {
  /** Opens a connection, sends `data` and nothing more; resolves with what the server sent before closing. */
  const starve = (data: string): Promise<string> =>
    within(
      new Promise<string>((resolve, reject) => {
        const { hostname, port } = new URL(origin);
        const socket = connect(Number(port), hostname, () => socket.write(data));
        let received = '';
        socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
        socket.on('error', reject);
        socket.on('close', () => resolve(received));
      }),
      10_000,
      'the server to close a starved connection',
    );

  test('headers that never end, a body that never comes: 408 and the connection is closed', async () => {
    const answers = await Promise.all([
      starve('POST /graphql HTTP/1.1\r\nHost: x\r\n'),
      starve(
        'POST /graphql HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{',
      ),
    ]);
    for (const answer of answers) expect(answer).toMatch(/^HTTP\/1\.1 408 /);
  });
});

describe('start-up', () => {
  test('without HOST it listens on loopback only, and logs the address it bound', () => {
    const ready = server.child
      .output()
      .split('\n')
      .find((l) => l.includes('"url"'));
    expect(JSON.parse(ready as string)).toMatchObject({
      msg: expect.stringMatching(
        /^CTF server listening on 127\.0\.0\.1:\d+: the team page at http:\/\/127\.0\.0\.1:\d+\/, /,
      ),
      address: '127.0.0.1',
      url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/graphql$/),
      page: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/$/),
    });
  });

  test.concurrent.each([
    ['RATE_LIMIT_ON_STORE_ERROR', 'alow'],
    ['RATE_LIMIT_DRY_RUN', '1'],
    ['PORT', 'http'],
    ['HTTP_REQUEST_TIMEOUT_MS', '5s'],
  ])('%s=%s stops it at once with one line and exit code 1', async (name, value) => {
    const child = startProcess(process.execPath, [MAIN], {
      env: { ...process.env, PORT: '0', [name]: value },
    });
    const code = await within(
      child.exited.then((exit) => exit.code),
      15_000,
      'the server to exit',
    );
    expect(code).toBe(1);
    const lines = child.output().trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0] as string)).toMatchObject({
      level: 'error',
      msg: 'CTF server failed to start',
      error: expect.stringContaining(`${name} must be`),
    });
    expect(lines[0]).toContain(JSON.stringify(JSON.stringify(value)).slice(1, -1));
  });

  test('RATE_LIMIT_DRY_RUN=true is said at start', async () => {
    const dry = await startServerProcess({ RATE_LIMIT_DRY_RUN: 'true' });
    await dry.stop();
    expect(dry.child.output()).toMatch(/"level":"warn","msg":"RATE_LIMIT_DRY_RUN=true: [^"]*never/);
    expect(dry.child.output()).toContain('"dryRun":true');
  });
});

describe('readServerConfig', () => {
  test('defaults: loopback, 10 s for headers, 30 s for a request, deny, no dry run', () => {
    expect(readServerConfig({})).toMatchObject({
      port: 4000,
      host: '127.0.0.1',
      headersTimeoutMs: 10_000,
      requestTimeoutMs: 30_000,
      onStoreError: 'deny',
      dryRun: false,
      dataPath: SERVER_DEFAULTS.dataPath,
    });
    expect(readServerConfig({ HOST: ' ', RATE_LIMIT_DRY_RUN: '' })).toMatchObject({
      host: '127.0.0.1',
      dryRun: false,
    });
  });

  test('RATE_LIMIT_ON_STORE_ERROR is deny, allow or local', () => {
    for (const policy of ['deny', 'allow', 'local']) {
      expect(readServerConfig({ RATE_LIMIT_ON_STORE_ERROR: policy }).onStoreError).toBe(policy);
    }
    expect(() => readServerConfig({ RATE_LIMIT_ON_STORE_ERROR: 'lokal' })).toThrow(
      'RATE_LIMIT_ON_STORE_ERROR must be "deny" or "allow" or "local", got "lokal"',
    );
  });

  test('headers may not take longer than the whole request', () => {
    expect(() =>
      readServerConfig({ HTTP_HEADERS_TIMEOUT_MS: '20000', HTTP_REQUEST_TIMEOUT_MS: '10000' }),
    ).toThrow('HTTP_HEADERS_TIMEOUT_MS (20000) must not exceed HTTP_REQUEST_TIMEOUT_MS (10000)');
    expect(readServerConfig({ HTTP_HEADERS_TIMEOUT_MS: '40000' }).requestTimeoutMs).toBe(40_000);
  });
});
