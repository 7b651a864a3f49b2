import type { ExecutionResult } from 'graphql';

import { RateLimitConfigError, type RateLimitDirectiveOptions } from '../../src';
import { releaseTogether } from '../support/barrier';
import { closeClients } from '../support/redis';
import { codes, limitedSchema, run } from '../support/schema';
import { freshStore, STORE_KINDS, type StoreUnderTest } from '../support/stores';

/*
 * Limits that count against something other than the caller: a field argument (`by:
 * "args.email"`), a named source (`by: "ip"`, `by: "global"`), several on one field, and costs
 * taken from an argument (`costArg`). Each runs on both stores.
 */

afterAll(closeClients);

interface Ctx {
  readonly ip?: string;
  readonly team?: { id: string };
}

const SDL = `
  type Query { ping: Int }
  type Mutation {
    login(email: String!, password: String!): Boolean
      @rateLimit(action: "login-email", window: 60, limit: 3, by: "args.email")
      @rateLimit(action: "login-ip", window: 60, limit: 5, by: "ip")
    sendInvite(to: String!): Boolean
      @rateLimit(action: "invite", window: 60, limit: 2)
      @rateLimit(action: "invite-site", window: 60, limit: 5, by: "global")
    search(first: Int = 10): Boolean @rateLimit(action: "search", window: 60, limit: 100, costArg: "first")
    pair(n: Int): Boolean
      @rateLimit(action: "pair-a", window: 60, limit: 8, costArg: "n")
      @rateLimit(action: "pair-b", window: 60, limit: 20, cost: 2)
  }
`;

const ok = (): boolean => true;
const resolvers = {
  Mutation: { login: ok, sendInvite: ok, search: ok, pair: ok },
};
const identities: RateLimitDirectiveOptions<Ctx>['identities'] = {
  ip: (ctx) => ctx.ip,
  global: () => 'all',
};
const passed = (results: ExecutionResult[], field: string): number =>
  results.filter((r) => r.data?.[field] === true).length;
const login = (email: string) =>
  `mutation { login(email: ${JSON.stringify(email)}, password: "x") }`;

describe.each(STORE_KINDS)('%s store', (kind) => {
  let s: StoreUnderTest;
  const schemaOn = (store = s.store) =>
    limitedSchema(SDL, resolvers, { store, identities: identities as never });

  beforeEach(async () => {
    s = await freshStore(kind);
  });

  /** `n` operations released at one instant, each on its own store handle. */
  const together = (n: number, source: (i: number) => string, ctx: (i: number) => Ctx) =>
    releaseTogether(n, async (i) => {
      const schema = schemaOn(await s.handle());
      return () => run(schema, source(i), ctx(i));
    });

  test('per argument: exactly 3 of 20 simultaneous logins for one email pass, from 20 IPs', async () => {
    const results = await together(
      20,
      () => login('a@example.com'),
      (i) => ({ ip: `10.0.0.${i}` }),
    );
    expect(passed(results, 'login')).toBe(3);
    expect(results.flatMap(codes).filter((c) => c === 'RATE_LIMITED')).toHaveLength(17);
  });

  test('per source: exactly 5 of 20 simultaneous logins from one IP pass, for 20 emails', async () => {
    const results = await together(
      20,
      (i) => login(`user${i}@example.com`),
      () => ({ ip: '10.0.0.1' }),
    );
    expect(passed(results, 'login')).toBe(5);
  });

  test('a hit blocked by the per-IP limit takes nothing of the per-email limit, and the reverse', async () => {
    const schema = schemaOn();
    // five emails from one IP use its whole limit
    for (let i = 0; i < 5; i++) await run(schema, login(`u${i}@example.com`), { ip: '10.0.0.1' });
    for (let i = 0; i < 4; i++) {
      const blocked = await run(schema, login('victim@example.com'), { ip: '10.0.0.1' });
      expect(blocked.errors?.[0]?.extensions).toMatchObject({ action: 'login-ip' });
    }
    // the victim's email still has all 3 attempts from elsewhere
    const elsewhere = await Promise.all(
      Array.from({ length: 4 }, (_, i) =>
        run(schema, login('victim@example.com'), { ip: `10.9.9.${i}` }),
      ),
    );
    expect(passed(elsewhere, 'login')).toBe(3);
    expect(elsewhere.flatMap(codes)).toEqual(['RATE_LIMITED']);
    // ...and the four blocked by their email took nothing from their IPs' limits (5 each)
    for (let i = 0; i < 4; i++) {
      const others = await Promise.all(
        Array.from({ length: 6 }, (_, j) =>
          run(schema, login(`other${i}-${j}@example.com`), { ip: `10.9.9.${i}` }),
        ),
      );
      expect(passed(others, 'login')).toBe(i < 3 ? 4 : 5);
    }
  });

  test('site-wide: blocked per-user hits leave the site-wide quota untouched', async () => {
    const results = await together(
      12,
      (i) => `mutation { sendInvite(to: "f${i}@example.com") }`,
      () => ({ team: { id: 'alice' } }),
    );
    expect(passed(results, 'sendInvite')).toBe(2);
    // 10 of alice's hits were blocked by her own limit: the site still has 5 - 2 = 3
    const others = await together(
      8,
      () => 'mutation { sendInvite(to: "x@example.com") }',
      (i) => ({ team: { id: `user-${i}` } }),
    );
    expect(passed(others, 'sendInvite')).toBe(3);
    expect(others.flatMap((r) => r.errors ?? []).map((e) => e.extensions?.action)).toEqual(
      Array(5).fill('invite-site'),
    );
  });

  test('one source value under two sources is two counters', async () => {
    const schema = limitedSchema(
      `type Query { ping: Int }
       type Mutation {
         byTeam: Boolean @rateLimit(action: "same", window: 60, limit: 1)
         byIp: Boolean @rateLimit(action: "same", window: 60, limit: 1, by: "ip")
       }`,
      { Mutation: { byTeam: ok, byIp: ok } },
      { store: s.store, identities: identities as never },
    );
    const ctx = { ip: '1.2.3.4', team: { id: '1.2.3.4' } };
    expect((await run(schema, 'mutation { byTeam }', ctx)).data).toEqual({ byTeam: true });
    expect((await run(schema, 'mutation { byIp }', ctx)).data).toEqual({ byIp: true });
  });

  test('a source that gives nobody is UNAUTHENTICATED and counts nothing on the other limit', async () => {
    const schema = schemaOn();
    for (let i = 0; i < 5; i++) {
      expect(codes(await run(schema, login('a@example.com'), {}))).toEqual(['UNAUTHENTICATED']);
    }
    const results = await Promise.all(
      Array.from({ length: 4 }, () => run(schema, login('a@example.com'), { ip: '10.0.0.1' })),
    );
    expect(passed(results, 'login')).toBe(3);
  });

  test('an async source is awaited; a source that returns an object fails the field', async () => {
    const schema = limitedSchema(SDL, resolvers, {
      store: s.store,
      identities: {
        ip: async (ctx: Ctx) => ctx.ip,
        global: () => ({ all: true }) as never,
      },
    });
    expect((await run(schema, login('a@example.com'), { ip: '10.0.0.1' })).data).toEqual({
      login: true,
    });
    const invite = await run(schema, 'mutation { sendInvite(to: "x") }', { team: { id: 'a' } });
    expect(codes(invite)).toEqual(['INTERNAL_SERVER_ERROR']);
    // nothing was counted for alice's own limit: two invites still pass once the source is sane
    const sane = limitedSchema(SDL, resolvers, { store: s.store, identities: identities as never });
    const again = await Promise.all(
      Array.from({ length: 3 }, () =>
        run(sane, 'mutation { sendInvite(to: "x") }', { team: { id: 'a' } }),
      ),
    );
    expect(passed(again, 'sendInvite')).toBe(2);
  });

  describe('costArg', () => {
    const team = { team: { id: 't' } };
    const search = (args: string) => `mutation { search${args} }`;

    test('the argument multiplies the cost; its default applies when the query omits it', async () => {
      const schema = schemaOn();
      expect((await run(schema, search('(first: 50)'), team)).data).toEqual({ search: true });
      expect((await run(schema, search(''), team)).data).toEqual({ search: true }); // 10
      expect((await run(schema, search('(first: 40)'), team)).data).toEqual({ search: true });
      const blocked = await run(schema, search('(first: 1)'), team);
      expect(blocked.errors?.[0]?.extensions).toMatchObject({ code: 'RATE_LIMITED' });
    });

    test('null, 0 and negative values count as 1', async () => {
      const schema = schemaOn();
      await run(schema, search('(first: 97)'), team);
      for (const value of ['null', '0', '-5']) {
        expect((await run(schema, search(`(first: ${value})`), team)).data).toEqual({
          search: true,
        });
      }
      expect(codes(await run(schema, search('(first: null)'), team))).toEqual(['RATE_LIMITED']);
    });

    test('a cost above the limit is RATE_LIMIT_COST_EXCEEDED and counts nothing', async () => {
      const schema = schemaOn();
      const refused = await run(schema, search('(first: 101)'), team);
      expect(refused.errors?.[0]?.extensions).toEqual({
        code: 'RATE_LIMIT_COST_EXCEEDED',
        action: 'search',
        limit: 100,
        cost: 101,
      });
      expect((await run(schema, search('(first: 100)'), team)).data).toEqual({ search: true });
    });

    test('with a fixed-cost limit beside it, exactly what fits passes under concurrency', async () => {
      // pair-a: 8 units, 3 per hit -> 2 hits; pair-b: 20 units, 2 per hit -> 10 hits
      const results = await together(
        10,
        () => 'mutation { pair(n: 3) }',
        () => team,
      );
      expect(passed(results, 'pair')).toBe(2);
      // the blocked eight took nothing of pair-b: 20 - 2*2 = 16 left = 8 hits of cost 2 (n: 1)
      const rest = await together(
        10,
        () => 'mutation { pair(n: 0) }',
        () => team,
      );
      expect(passed(rest, 'pair')).toBe(2); // pair-a: 8 - 6 = 2 left
    });
  });
});

describe('a bad by or costArg fails at schema build, naming the field and the argument', () => {
  const build =
    (field: string, options: Partial<RateLimitDirectiveOptions> = {}) =>
    () =>
      limitedSchema(
        `type Query { ping: Int } type Mutation { ${field} }`,
        {},
        {
          store: { hit: () => Promise.reject(new Error('unused')) },
          identities: { ip: () => 'x' },
          ...options,
        },
      );
  test.each([
    [
      'an unknown source',
      'go: Int @rateLimit(action: "a", window: 1, limit: 1, by: "nope")',
      /by: "nope"/,
    ],
    [
      'a missing argument',
      'go(a: ID!): Int @rateLimit(action: "a", window: 1, limit: 1, by: "args.b")',
      /names no argument/,
    ],
    [
      'a nullable argument',
      'go(a: String): Int @rateLimit(action: "a", window: 1, limit: 1, by: "args.a")',
      /non-null/,
    ],
    [
      'a list argument',
      'go(a: [ID!]!): Int @rateLimit(action: "a", window: 1, limit: 1, by: "args.a")',
      /non-null scalar or enum/,
    ],
    [
      'a Boolean argument',
      'go(a: Boolean!): Int @rateLimit(action: "a", window: 1, limit: 1, by: "args.a")',
      /Boolean/,
    ],
    ['an empty by', 'go: Int @rateLimit(action: "a", window: 1, limit: 1, by: "")', /by: ""/],
    [
      'a missing costArg',
      'go: Int @rateLimit(action: "a", window: 1, limit: 1, costArg: "n")',
      /costArg: "n"\) names no argument/,
    ],
    [
      'a String costArg',
      'go(n: String): Int @rateLimit(action: "a", window: 1, limit: 1, costArg: "n")',
      /needs an Int argument/,
    ],
    [
      'a list costArg',
      'go(n: [Int]): Int @rateLimit(action: "a", window: 1, limit: 1, costArg: "n")',
      /needs an Int argument/,
    ],
  ])('%s', (_, field, message) => {
    expect(build(field)).toThrow(RateLimitConfigError);
    expect(build(field)).toThrow(/Mutation\.go: @rateLimit\((by|costArg)/);
    expect(build(field)).toThrow(message);
  });

  test('enum and Int arguments are sources: one counter per value', async () => {
    const schema = limitedSchema(
      `enum Kind { A B }
       type Query { ping: Int }
       type Mutation {
         go(k: Kind!, n: Int!): Boolean
           @rateLimit(action: "k", window: 60, limit: 1, by: "args.k")
           @rateLimit(action: "n", window: 60, limit: 2, by: "args.n")
       }`,
      { Mutation: { go: ok } },
      { store: (await freshStore('memory')).store },
    );
    const go = (k: string, n: number) => run(schema, `mutation { go(k: ${k}, n: ${n}) }`);
    expect((await go('A', 1)).data).toEqual({ go: true });
    expect(codes(await go('A', 2))).toEqual(['RATE_LIMITED']);
    expect((await go('B', 1)).data).toEqual({ go: true });
    expect(codes(await go('B', 1))).toEqual(['RATE_LIMITED']); // k: B used; n: 1 has 0 left too
  });

  test('bad identities throw at construction', () => {
    expect(build('go: Int', { identities: { ip: 'x' as never } })).toThrow(
      /identities\.ip must be a function/,
    );
    expect(build('go: Int', { identities: { 'args.x': () => 'x' } })).toThrow(
      /must be non-empty and not start with "args\."/,
    );
  });
});
