import { createMemoryStore, type RateLimitRule, type RateLimitStore } from '../../src';
import { createStore, timedStore } from '../../examples/custom-store';

/*
 * The custom store of docs/custom-store.md (examples/custom-store.ts): it keeps every method of
 * the contract its inner store has, decides as that store does, and reports each call. The
 * project's store tests run against it with CUSTOM_STORE=examples/custom-store.ts.
 */

const rule: RateLimitRule = {
  action: 'submit',
  algorithm: 'FIXED_WINDOW',
  windowSeconds: 60,
  limit: 3,
  cost: 1,
};
const METHODS = ['hit', 'peek', 'reset', 'take', 'refund', 'refundAndPeek', 'close'] as const;

test('it keeps every method of the contract its inner store has', () => {
  const store = timedStore(createMemoryStore(), () => undefined);
  expect(METHODS.filter((m) => typeof store[m] !== 'function')).toEqual([]);
  const bare: RateLimitStore = {
    hit: (identity, rules, costs) => store.hit(identity, rules, costs),
  };
  expect(Object.keys(timedStore(bare, () => undefined))).toEqual(['hit']);
});

test('three of four hits pass, each call reported; a budget settles in one call', async () => {
  const calls: string[] = [];
  const store = timedStore(createMemoryStore(), (method) => calls.push(method));
  const allowed = [];
  for (let i = 0; i < 4; i++) allowed.push((await store.hit('t', [rule])).allowed);
  expect(allowed).toEqual([true, true, true, false]);
  const taken = await store.take?.('b', { ...rule, limit: 100 }, 40);
  await store.refundAndPeek?.('b', { ...rule, limit: 100 }, taken?.receipt as never, 30);
  expect(calls).toEqual(['hit', 'hit', 'hit', 'hit', 'take', 'refundAndPeek']);
});

test('stores of one namespace share their counters; a new namespace starts empty', async () => {
  const [a, b, c] = [createStore('n1'), createStore('n1'), createStore('n2')];
  await a.hit('t', [rule]);
  await a.hit('t', [rule]);
  await a.hit('t', [rule]);
  expect((await b.hit('t', [rule])).allowed).toBe(false);
  expect((await c.hit('t', [rule])).allowed).toBe(true);
});
