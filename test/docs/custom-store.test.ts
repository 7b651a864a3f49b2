import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { createMemoryStore, type RateLimitRule, type RateLimitStore } from '../../src';
import { createStore, timedStore } from '../../examples/custom-store';
import { closeClients, connectRedis, uniquePrefix } from '../support/redis';
import { codes, limitedSchema, run } from '../support/schema';
import { openedRedisStore } from '../support/stores';

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
afterAll(() => closeClients());

test('it keeps every method of the contract its inner store has', () => {
  // the memory store has every method of the contract
  const inner = createMemoryStore();
  expect(Object.keys(timedStore(inner, () => undefined)).sort()).toEqual(Object.keys(inner).sort());
  const store = timedStore(inner, () => undefined);
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

test("the page's contract table has a row for every method of the contract", () => {
  const page = readFileSync(join(__dirname, '..', '..', 'docs', 'custom-store.md'), 'utf8');
  const rows = [...page.matchAll(/^\| `(\w+)\(/gm)].map(([, method]) => method).sort();
  // the memory store has every method but `settingUp`: it has nothing to set up
  expect(rows).toEqual([...Object.keys(createMemoryStore()), 'settingUp'].sort());
});

test('through the wrapper, two finished CONCURRENCY calls free their slots at once', async () => {
  const inner = await openedRedisStore({ client: await connectRedis(), prefix: uniquePrefix() });
  const calls: string[] = [];
  const store = timedStore(inner, (method) => calls.push(method));
  const schema = limitedSchema(
    'type Query { work: Int @rateLimit(action: "work", window: 30, limit: 2, algorithm: CONCURRENCY) }',
    { Query: { work: () => 1 } },
    { store, identify: () => 'caller' },
  );
  try {
    const query = '{ work }';
    const both = await Promise.all([run(schema, query), run(schema, query)]);
    expect(both.map(codes)).toEqual([[], []]);
    // both calls ended: their slots are free, not held for the 30 s of their leases
    expect(codes(await run(schema, query))).toEqual([]);
    expect(calls.filter((m) => m === 'release')).toHaveLength(3);
  } finally {
    await store.close?.();
  }
});
