import type { ExecutionResult, GraphQLSchema } from 'graphql';

import { ALGORITHMS, type RateLimitRule } from '../../src';
import { RATE_ALGORITHMS } from '../support/algorithms';
import { releaseTogether } from '../support/barrier';
import { waitFor } from '../support/processes';
import { closeClients } from '../support/redis';
import { codes, limitedSchema, run } from '../support/schema';
import { freshStore, STORE_KINDS, type StoreUnderTest } from '../support/stores';

/*
 * The guarantees of SPEC.md, each stated once as a test and run against every store and every
 * algorithm. The Redis store decides on the Redis server's clock; the memory store on Date.now.
 */

afterAll(closeClients);

const ctx = (id = 'team-1') => ({ team: { id } });
const passes = (result: ExecutionResult): number =>
  Object.values(result.data ?? {}).filter((v) => v === true).length;
const aliases = (field: string, n: number): string =>
  `mutation { ${Array.from({ length: n }, (_, i) => `a${i}: ${field}`).join(' ')} }`;
const ok = () => true;

describe.each(STORE_KINDS)('%s store', (kind) => {
  let s: StoreUnderTest;
  beforeEach(async () => {
    s = await freshStore(kind);
  });

  describe.each(ALGORITHMS)('%s', (algorithm) => {
    const rule = (over: Partial<RateLimitRule> = {}): RateLimitRule => ({
      action: 'act',
      algorithm,
      windowSeconds: 60,
      limit: 10,
      cost: 1,
      ...over,
    });
    test('exactly `limit` of 100 simultaneous hits pass, from 20 workers', async () => {
      const results = await releaseTogether(20, async () => {
        const store = await s.handle();
        return () => Promise.all(Array.from({ length: 5 }, () => store.hit('id', [rule()])));
      });
      const allowed = results.flat().filter((d) => d.allowed);
      expect(allowed).toHaveLength(10);
    });

    // 3 per 1 s, 7 per 2 s, 6 per 7 s: one unit is never a whole number of microseconds
    test.each([
      [3, 1],
      [7, 2],
      [6, 7],
    ])(
      '%i per %i s: a whole limit passes at once and `remaining` counts down to 0',
      async (limit, windowSeconds) => {
        const r = rule({ limit, windowSeconds });
        const decisions = await Promise.all(
          Array.from({ length: 2 * limit }, () => s.store.hit('id', [r])),
        );
        const allowed = decisions.filter((d) => d.allowed);
        expect(allowed).toHaveLength(limit);
        expect(allowed.map((d) => d.limits[0]?.remaining).sort((a = 0, b = 0) => b - a)).toEqual(
          Array.from({ length: limit }, (_, i) => limit - 1 - i),
        );
      },
    );

    test('identities never share a counter', async () => {
      await Promise.all(Array.from({ length: 12 }, () => s.store.hit('a', [rule()])));
      const other = await s.store.hit('b', [rule()]);
      expect(other).toMatchObject({ allowed: true, limits: [{ remaining: 9 }] });
    });
  });

  // hits over time: a mutation's fields run one after the other, each hit counted as it comes
  describe.each(RATE_ALGORITHMS)('%s through a schema', (algorithm) => {
    const schemaOf = (sdl: string, fields: string[]) =>
      limitedSchema(
        `type Query { ping: Int } ${sdl}`.replaceAll('$ALG', algorithm),
        { Mutation: Object.fromEntries(fields.map((f) => [f, ok])) },
        { store: s.store },
      );

    test('a blocked hit consumes nothing: a second field sharing the action keeps its budget', async () => {
      const schema = schemaOf(
        `type Mutation {
          both: Boolean @rateLimit(action: "shared", window: 60, limit: 3, algorithm: $ALG)
                        @rateLimit(action: "tight", window: 60, limit: 1, algorithm: $ALG)
          other: Boolean @rateLimit(action: "shared", window: 60, limit: 3, algorithm: $ALG)
        }`,
        ['both', 'other'],
      );
      expect(passes(await run(schema, aliases('both', 6), ctx()))).toBe(1);
      // five blocked hits of `both` took nothing from "shared": 3 - 1 = 2 remain for `other`
      expect(passes(await run(schema, aliases('other', 4), ctx()))).toBe(2);
    });

    test('limits 5 and 3 on one field: 3 of 10 simultaneous hits pass, the limit-5 action has 2 left', async () => {
      const schema = schemaOf(
        `type Mutation {
          pair: Boolean @rateLimit(action: "five", window: 60, limit: 5, algorithm: $ALG)
                        @rateLimit(action: "three", window: 60, limit: 3, algorithm: $ALG)
          five: Boolean @rateLimit(action: "five", window: 60, limit: 5, algorithm: $ALG)
        }`,
        ['pair', 'five'],
      );
      const results = await Promise.all(
        Array.from({ length: 10 }, () => run(schema, 'mutation { pair }', ctx())),
      );
      expect(results.filter((r) => r.data?.pair === true)).toHaveLength(3);
      expect(passes(await run(schema, aliases('five', 5), ctx()))).toBe(2);
    });

    test('cost takes that many units, and a blocked costly hit takes none', async () => {
      const schema = schemaOf(
        `type Mutation {
          heavy: Boolean @rateLimit(action: "units", window: 60, limit: 10, cost: 3, algorithm: $ALG)
          light: Boolean @rateLimit(action: "units", window: 60, limit: 10, algorithm: $ALG)
        }`,
        ['heavy', 'light'],
      );
      expect(passes(await run(schema, aliases('heavy', 5), ctx()))).toBe(3);
      expect(passes(await run(schema, aliases('light', 3), ctx()))).toBe(1);
    });

    test('an OBJECT directive covers each field without its own; a field directive overrides it', async () => {
      const schema = schemaOf(
        `type Mutation @rateLimit(action: "team", window: 60, limit: 2, algorithm: $ALG) {
          a: Boolean
          b: Boolean
          own: Boolean @rateLimit(action: "own", window: 60, limit: 1, algorithm: $ALG)
        }`,
        ['a', 'b', 'own'],
      );
      expect(passes(await run(schema, 'mutation { a }', ctx()))).toBe(1);
      // a and b share the type's "team" counter: one unit is left for b
      expect(passes(await run(schema, aliases('b', 3), ctx()))).toBe(1);
      // `own` has only its own limit of 1, untouched by the type's
      expect(passes(await run(schema, aliases('own', 3), ctx()))).toBe(1);
      expect(passes(await run(schema, 'mutation { a }', ctx('team-2')))).toBe(1);
    });
  });

  // calls in flight: the same guarantees, counted while every call that passed still runs
  describe('CONCURRENCY through a schema', () => {
    let running = 0;
    let open!: () => void;
    let opened: Promise<void>;
    beforeEach(() => {
      running = 0;
      opened = new Promise<void>((resolve) => (open = resolve));
    });
    afterEach(() => open());
    const held = async () => {
      running++;
      await opened;
      return true;
    };
    const schemaOf = (sdl: string, fields: string[]) =>
      limitedSchema(
        `type Mutation { ping: Int } ${sdl}`.replaceAll('$ALG', 'CONCURRENCY'),
        { Query: Object.fromEntries(fields.map((f) => [f, held])) },
        { store: s.store, timeoutMs: 5_000 },
      );
    /** Starts `n` calls of `field` at once: how many passed, once each was decided. */
    const inFlight = async (schema: GraphQLSchema, field: string, n: number, id = 'team-1') => {
      const before = running;
      let refused = 0;
      for (let i = 0; i < n; i++) {
        void run(schema, `{ ${field} }`, ctx(id)).then((r) => {
          if (codes(r).includes('RATE_LIMITED')) refused++;
        });
      }
      await waitFor(`${n} calls of ${field} decided`, () => running - before + refused === n);
      return running - before;
    };

    test('a blocked call holds nothing: a second field sharing the action keeps its slots', async () => {
      const schema = schemaOf(
        `type Query {
          both: Boolean @rateLimit(action: "shared", window: 60, limit: 3, algorithm: $ALG)
                        @rateLimit(action: "tight", window: 60, limit: 1, algorithm: $ALG)
          other: Boolean @rateLimit(action: "shared", window: 60, limit: 3, algorithm: $ALG)
        }`,
        ['both', 'other'],
      );
      expect(await inFlight(schema, 'both', 6)).toBe(1);
      expect(await inFlight(schema, 'other', 4)).toBe(2);
    });

    test('limits 5 and 3 on one field: 3 of 10 simultaneous calls run, the limit-5 action has 2 left', async () => {
      const schema = schemaOf(
        `type Query {
          pair: Boolean @rateLimit(action: "five", window: 60, limit: 5, algorithm: $ALG)
                        @rateLimit(action: "three", window: 60, limit: 3, algorithm: $ALG)
          five: Boolean @rateLimit(action: "five", window: 60, limit: 5, algorithm: $ALG)
        }`,
        ['pair', 'five'],
      );
      expect(await inFlight(schema, 'pair', 10)).toBe(3);
      expect(await inFlight(schema, 'five', 5)).toBe(2);
    });

    test('cost takes that many slots, and a blocked costly call takes none', async () => {
      const schema = schemaOf(
        `type Query {
          heavy: Boolean @rateLimit(action: "units", window: 60, limit: 10, cost: 3, algorithm: $ALG)
          light: Boolean @rateLimit(action: "units", window: 60, limit: 10, algorithm: $ALG)
        }`,
        ['heavy', 'light'],
      );
      expect(await inFlight(schema, 'heavy', 5)).toBe(3);
      expect(await inFlight(schema, 'light', 3)).toBe(1);
    });

    test('an OBJECT directive covers each field without its own; a field directive overrides it', async () => {
      const schema = schemaOf(
        `type Query @rateLimit(action: "team", window: 60, limit: 2, algorithm: $ALG) {
          a: Boolean
          b: Boolean
          own: Boolean @rateLimit(action: "own", window: 60, limit: 1, algorithm: $ALG)
        }`,
        ['a', 'b', 'own'],
      );
      expect(await inFlight(schema, 'a', 1)).toBe(1);
      expect(await inFlight(schema, 'b', 3)).toBe(1);
      expect(await inFlight(schema, 'own', 3)).toBe(1);
      expect(await inFlight(schema, 'a', 3, 'team-2')).toBe(2);
    });
  });

  describe('retryAfter is correct to the second', () => {
    const blocked = async (
      sdl: string,
      field: string,
      hits: number,
    ): Promise<Record<string, unknown>> => {
      const schema = limitedSchema(
        `type Query { ping: Int } ${sdl}`,
        { Mutation: { [field]: ok } },
        { store: s.store },
      );
      const result = await run(schema, aliases(field, hits), ctx());
      expect(codes(result)).toContain('RATE_LIMITED');
      return result.errors?.find((e) => e.extensions?.code === 'RATE_LIMITED')?.extensions ?? {};
    };

    test('FIXED_WINDOW: the rest of the window', async () => {
      const ext = await blocked(
        'type Mutation { f: Boolean @rateLimit(action: "f", window: 10, limit: 2) }',
        'f',
        3,
      );
      expect(ext).toMatchObject({ action: 'f', limit: 2, window: 10, retryAfter: 10 });
    });

    test('SLIDING_WINDOW: until the oldest unit in the way leaves the window', async () => {
      const schema = limitedSchema(
        'type Query { ping: Int } type Mutation { s: Boolean @rateLimit(action: "s", window: 10, limit: 2, algorithm: SLIDING_WINDOW) }',
        { Mutation: { s: ok } },
        { store: s.store },
      );
      await run(schema, 'mutation { s }', ctx());
      await new Promise((r) => setTimeout(r, 1_100));
      const result = await run(schema, aliases('s', 2), ctx());
      // the first unit, 1.1 s old, leaves the window in 8.9 s
      expect(result.errors?.[0]?.extensions).toMatchObject({ code: 'RATE_LIMITED', retryAfter: 9 });
    });

    test('TOKEN_BUCKET: until enough tokens have dripped back', async () => {
      // limit 5 per 10 s: one token every 2 s; a cost-3 hit on an empty bucket waits 6 s
      const one = await blocked(
        'type Mutation { t: Boolean @rateLimit(action: "t", window: 10, limit: 5, algorithm: TOKEN_BUCKET) }',
        't',
        6,
      );
      expect(one).toMatchObject({ retryAfter: 2 });
      const three = await blocked(
        'type Mutation { t: Boolean @rateLimit(action: "t", window: 10, limit: 5, cost: 3, algorithm: TOKEN_BUCKET) }',
        't',
        1,
      );
      expect(three).toMatchObject({ retryAfter: 6 });
    });

    test('CONCURRENCY: until the oldest lease in the way expires, at the latest', async () => {
      const r: RateLimitRule = {
        action: 'c',
        algorithm: 'CONCURRENCY',
        windowSeconds: 10,
        limit: 2,
        cost: 1,
      };
      await s.store.hit('id', [r]);
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      await s.store.hit('id', [r]);
      const blocked = await s.store.hit('id', [r]);
      // the first lease, 1.1 s old, expires in 8.9 s unless renewed or released first
      expect(Math.ceil((blocked.limits[0]?.retryAfterMs ?? 0) / 1000)).toBe(9);
    });

    test('mixed algorithms on one field: the error names the limit with the longest wait', async () => {
      const schema = limitedSchema(
        `type Query { ping: Int } type Mutation {
          m: Boolean @rateLimit(action: "burst", window: 10, limit: 2, algorithm: TOKEN_BUCKET)
                     @rateLimit(action: "slow", window: 30, limit: 2, algorithm: SLIDING_WINDOW)
                     @rateLimit(action: "fixed", window: 20, limit: 5)
        }`,
        { Mutation: { m: ok } },
        { store: s.store },
      );
      const result = await run(schema, aliases('m', 3), ctx());
      expect(passes(result)).toBe(2);
      // the bucket refills a token in 5 s, the sliding window frees one in 30 s
      expect(result.errors?.[0]?.extensions).toMatchObject({
        action: 'slow',
        window: 30,
        retryAfter: 30,
      });
    });
  });
});
