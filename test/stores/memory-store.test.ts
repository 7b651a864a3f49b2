import fc from 'fast-check';

import { createMemoryStore, RateLimitConfigError, type RateLimitRule } from '../../src';

const rule: RateLimitRule = {
  action: 'submit',
  algorithm: 'FIXED_WINDOW',
  windowSeconds: 10,
  limit: 3,
  cost: 1,
};

function clock(start = 1_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

test('the window opens at the first hit and the budget comes back when it ends', async () => {
  const c = clock();
  const store = createMemoryStore({ now: c.now });
  for (let i = 0; i < 3; i++) expect((await store.hit('a', [rule])).allowed).toBe(true);
  c.advance(4_000);
  const blocked = await store.hit('a', [rule]);
  expect(blocked.allowed).toBe(false);
  expect(blocked.limits[0]).toMatchObject({ remaining: 0, retryAfterMs: 6_000 });
  c.advance(5_999);
  expect((await store.hit('a', [rule])).allowed).toBe(false);
  c.advance(1);
  const fresh = await store.hit('a', [rule]);
  expect(fresh.allowed).toBe(true);
  expect(fresh.limits[0]).toMatchObject({ remaining: 2, resetMs: 10_000, retryAfterMs: 0 });
});

test('a blocked hit consumes nothing, on any of the limits', async () => {
  const store = createMemoryStore({ now: clock().now });
  const tight = { ...rule, action: 'tight', limit: 1 };
  const loose = { ...rule, action: 'loose', limit: 5 };
  expect((await store.hit('a', [loose, tight])).allowed).toBe(true);
  for (let i = 0; i < 3; i++) expect((await store.hit('a', [loose, tight])).allowed).toBe(false);
  const left = await store.hit('a', [loose]);
  expect(left.limits[0]?.remaining).toBe(3);
});

test('cost takes that many units', async () => {
  const store = createMemoryStore({ now: clock().now });
  const heavy = { ...rule, limit: 5, cost: 2 };
  expect((await store.hit('a', [heavy])).limits[0]?.remaining).toBe(3);
  expect((await store.hit('a', [heavy])).limits[0]?.remaining).toBe(1);
  expect((await store.hit('a', [heavy])).allowed).toBe(false);
});

describe('maxEntries', () => {
  test('a full store refuses a hit that needs a new counter, and still decides the others', async () => {
    const c = clock();
    const store = createMemoryStore({ now: c.now, maxEntries: 3 });
    for (const id of ['a', 'b', 'c']) expect((await store.hit(id, [rule])).allowed).toBe(true);
    await expect(store.hit('d', [rule])).rejects.toThrow(/Memory store full: 3 counters/);
    // no counter in use was evicted to make room: `a` keeps what it took
    expect(await store.hit('a', [rule])).toMatchObject({
      allowed: true,
      limits: [{ remaining: 1 }],
    });
    expect((await store.hit('a', [rule])).allowed).toBe(true);
    expect((await store.hit('a', [rule])).allowed).toBe(false);
    // a blocked hit writes nothing, so a full store still decides it, new counter or not
    const blocked = await store.hit('a', [rule, { ...rule, action: 'new' }]);
    expect(blocked).toMatchObject({ allowed: false, limits: [{ remaining: 0 }, { remaining: 3 }] });
    // once the counters expire, their room is taken back
    c.advance(10_000);
    expect(await store.hit('d', [rule])).toMatchObject({
      allowed: true,
      limits: [{ remaining: 2 }],
    });
  });

  test('a hit with two new counters and room for one is refused whole, and takes no room', async () => {
    const c = clock();
    const store = createMemoryStore({ now: c.now, maxEntries: 2 });
    await store.hit('a', [rule]);
    const other = { ...rule, action: 'other' };
    await expect(store.hit('b', [rule, other])).rejects.toThrow(/full/);
    expect((await store.hit('b', [rule])).allowed).toBe(true);
    expect(await store.hit('a', [rule])).toMatchObject({ limits: [{ remaining: 1 }] });
  });

  test('expired counters are reclaimed in a full store, whatever their order', async () => {
    const c = clock();
    const store = createMemoryStore({ now: c.now, maxEntries: 2_000 });
    const short = { ...rule, windowSeconds: 1 };
    // every other counter is short-lived: the expired ones are scattered among live ones
    for (let i = 0; i < 2_000; i++) await store.hit(`id-${i}`, [i % 2 ? short : rule]);
    await expect(store.hit('new', [rule])).rejects.toThrow(/full/);
    c.advance(1_000);
    for (let i = 0; i < 1_000; i++) {
      expect((await store.hit(`new-${i}`, [rule])).allowed).toBe(true);
    }
    await expect(store.hit('one-more', [rule])).rejects.toThrow(/full/);
    // the live half kept its counts
    expect(await store.hit('id-0', [rule])).toMatchObject({ limits: [{ remaining: 1 }] });
  });

  test('must be a whole number >= 1', () => {
    for (const maxEntries of [0, -1, 1.5, NaN]) {
      expect(() => createMemoryStore({ maxEntries })).toThrow(RateLimitConfigError);
    }
  });
});

/**
 * GCRA in exact rational arithmetic (BigInt, time in units of 1/limit microsecond, where one
 * token's interval is `windowUs` units): what TOKEN_BUCKET must answer, to the microsecond.
 */
function exactBucket(limit: number, windowSeconds: number) {
  const L = BigInt(limit);
  const W = BigInt(windowSeconds) * 1_000_000n;
  const ceilDiv = (a: bigint, b: bigint): bigint => (a <= 0n ? 0n : (a + b - 1n) / b);
  const tokens = (nowUs: bigint, tat: bigint): number => {
    const n = ((nowUs + W) * L - tat) / W;
    return Number(n < 0n ? 0n : n > L ? L : n);
  };
  let tat = 0n;
  return (nowUs: bigint, cost: number) => {
    const start = tat > nowUs * L ? tat : nowUs * L;
    const next = start + BigInt(cost) * W;
    const over = next - (nowUs + W) * L;
    if (over > 0n) {
      return {
        allowed: false,
        remaining: tokens(nowUs, start),
        resetMs: Number(ceilDiv(start - nowUs * L, 1000n * L)),
        retryAfterMs: Number(ceilDiv(over, 1000n * L)),
      };
    }
    tat = next;
    return {
      allowed: true,
      remaining: tokens(nowUs, next),
      resetMs: Number(ceilDiv(next - nowUs * L, 1000n * L)),
      retryAfterMs: 0,
    };
  };
}

test('TOKEN_BUCKET answers exactly what rational GCRA answers, for any limit and window', async () => {
  const limits = fc.oneof(
    fc.integer({ min: 1, max: 50 }),
    fc.integer({ min: 1, max: 1_000_000 }),
    // the largest limits, where limit^2 nears 2^53
    fc.integer({ min: 94_000_000, max: 94_906_265 }),
  );
  const steps = fc.array(
    fc.record({ gapPpm: fc.nat({ max: 1_000_000 }), cost: fc.integer({ min: 1, max: 5 }) }),
    { minLength: 1, maxLength: 40 },
  );
  await fc.assert(
    fc.asyncProperty(
      limits,
      fc.integer({ min: 1, max: 100_000 }),
      fc.nat({ max: 1e9 }),
      steps,
      async (limit, window, startShift, plan) => {
        // at most a token per microsecond, as the directive allows
        const windowSeconds = Math.max(window, Math.ceil(limit / 1_000_000));
        const rule: RateLimitRule = {
          action: 'b',
          algorithm: 'TOKEN_BUCKET',
          windowSeconds,
          limit,
          cost: 1,
        };
        const c = clock(1_780_000_000_000 + startShift);
        const store = createMemoryStore({ now: c.now });
        const model = exactBucket(limit, windowSeconds);
        for (const { gapPpm, cost: wanted } of plan) {
          // gaps up to a whole window, so the bucket drains and refills
          c.advance(Math.floor((gapPpm / 1e6) * windowSeconds * 1000));
          const cost = Math.min(wanted, limit);
          const d = await store.hit('id', [{ ...rule, cost }]);
          const want = model(BigInt(c.now()) * 1000n, cost);
          expect({ allowed: d.allowed, ...d.limits[0] }).toEqual(want);
        }
      },
    ),
    { seed: 20_260_611, numRuns: 300 },
  );
});
