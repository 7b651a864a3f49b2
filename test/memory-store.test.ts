import { createMemoryStore, type RateLimitRule } from '../src';

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
