import {
  createMemoryStore,
  RateLimitConfigError,
  type RateLimitAlgorithm,
  type RateLimitRule,
  type RateLimitStore,
  type TakeReceipt,
} from '../../src';
import { sleep } from '../support/processes';
import { closeClients } from '../support/redis';
import { freshStore, STORE_KINDS, type StoreKind } from '../support/stores';

/*
 * `take` and `refund`, how a budget charges an operation's estimate and refunds what its
 * result did not use: on both stores, every algorithm, against real Redis with short windows.
 */

afterAll(closeClients);

const rule = (
  algorithm: RateLimitAlgorithm,
  limit: number,
  windowSeconds: number,
): RateLimitRule => ({
  action: 'budget',
  algorithm,
  windowSeconds,
  limit,
  cost: 1,
});

async function taken(store: RateLimitStore, id: string, r: RateLimitRule, units: number) {
  const decision = await store.take!(id, r, units);
  expect(decision.allowed).toBe(true);
  return decision.receipt as TakeReceipt;
}

const remaining = async (store: RateLimitStore, id: string, r: RateLimitRule) =>
  (await store.peek!(id, [r]))[0]?.remaining;

describe.each(STORE_KINDS)('%s store', (kind: StoreKind) => {
  let store: RateLimitStore;
  let n = 0;
  const id = () => `team-${kind}-${++n}`;
  beforeEach(async () => {
    ({ store } = await freshStore(kind));
  });

  // a bucket of 100 an hour refills one token per 36 s: nothing refills during a test
  test.each([
    ['FIXED_WINDOW', 60],
    ['SLIDING_WINDOW', 60],
    ['TOKEN_BUCKET', 3600],
  ] as const)(
    '%s: a refund of 47 of 50 taken leaves exactly 3 taken',
    async (algorithm, window) => {
      const r = rule(algorithm, 100, window);
      const team = id();
      const receipt = await taken(store, team, r, 50);
      expect(receipt.units).toBe(50);
      expect(await remaining(store, team, r)).toBe(50);
      await expect(store.refund!(team, r, receipt, 47)).resolves.toBe(true);
      expect(await remaining(store, team, r)).toBe(97);
      // the points refunded can be taken again, and no more
      await taken(store, team, r, 97);
      expect((await store.take!(team, r, 1)).allowed).toBe(false);
    },
  );

  test('TOKEN_BUCKET: the tokens refilled while the operation ran are not lost', async () => {
    // 100 per 10 s: an interval is 100 ms, and the 3 tokens kept take 300 ms to refill
    const r = rule('TOKEN_BUCKET', 100, 10);
    const team = id();
    const started = performance.now();
    const receipt = await taken(store, team, r, 50);
    await sleep(150);
    await expect(store.refund!(team, r, receipt, 47)).resolves.toBe(true);
    const left = (await remaining(store, team, r)) as number;
    const refilled = Math.floor((performance.now() - started) / 100);
    // 3 taken, and at least one interval refilled since: a refund that also took back the
    // time since the take would leave 97
    expect(left).toBeGreaterThanOrEqual(98);
    expect(left).toBeLessThanOrEqual(97 + refilled);
  });

  test('a refund of everything taken leaves the limit whole', async () => {
    for (const algorithm of ['FIXED_WINDOW', 'SLIDING_WINDOW', 'TOKEN_BUCKET'] as const) {
      const r = rule(algorithm, 10, 60);
      const team = id();
      await taken(store, team, r, 4);
      const receipt = await taken(store, team, r, 5);
      await expect(store.refund!(team, r, receipt, 5)).resolves.toBe(true);
      expect(await remaining(store, team, r)).toBe(6);
    }
  });

  test('a take is refunded once, and never more than it took', async () => {
    const r = rule('FIXED_WINDOW', 10, 60);
    const team = id();
    const receipt = await taken(store, team, r, 4);
    await taken(store, team, r, 3);
    await expect(store.refund!(team, r, receipt, 5)).rejects.toThrow(RateLimitConfigError);
    await expect(store.refund!(team, r, receipt, 0)).rejects.toThrow(/units/);
    await expect(store.refund!(team, r, receipt, 2)).resolves.toBe(true);
    // a second refund of the same take would refund the other take's units
    await expect(store.refund!(team, r, receipt, 2)).rejects.toThrow(/once/);
    expect(await remaining(store, team, r)).toBe(5);
  });

  test('a blocked take takes nothing and has no receipt', async () => {
    const r = rule('TOKEN_BUCKET', 10, 60);
    const team = id();
    await taken(store, team, r, 8);
    const blocked = await store.take!(team, r, 3);
    expect(blocked.allowed).toBe(false);
    expect(blocked.receipt).toBeUndefined();
    expect(blocked.limits[0]?.retryAfterMs).toBeGreaterThan(0);
    expect(await remaining(store, team, r)).toBe(2);
  });

  test.each(['FIXED_WINDOW', 'SLIDING_WINDOW'] as const)(
    '%s: units taken in a window that ended are not given to the next one',
    async (algorithm) => {
      const r = rule(algorithm, 10, 1);
      const team = id();
      const old = await taken(store, team, r, 5);
      // the take's window ends within a second; wait until it has, then count 4 in the next
      await sleep(1_100);
      expect(await remaining(store, team, r)).toBe(10);
      const current = await taken(store, team, r, 4);
      await expect(store.refund!(team, r, old, 3)).resolves.toBe(false);
      expect(await remaining(store, team, r)).toBe(6);
      await expect(store.refund!(team, r, current, 1)).resolves.toBe(true);
      expect(await remaining(store, team, r)).toBe(7);
    },
  );
});

describe('TOKEN_BUCKET refund, on the memory store clock', () => {
  // 10 tokens a second: one interval is 100 ms
  const r = rule('TOKEN_BUCKET', 10, 1);
  let nowMs = 1_000_000;
  const store = createMemoryStore({ now: () => nowMs });

  test("within the kept tokens' refill time, the refund is exact", async () => {
    const receipt = await taken(store, 'a', r, 10);
    nowMs += 250; // 2.5 intervals refilled, fewer than the 3 kept
    await expect(store.refund!('a', r, receipt, 7)).resolves.toBe(true);
    // 3 kept, of which 2.5 came back: 9 whole tokens
    expect(await remaining(store, 'a', r)).toBe(9);
    nowMs += 1_000;
  });

  test('later, it refunds what the take still owes: its tokens less the time since', async () => {
    const receipt = await taken(store, 'b', r, 10);
    nowMs += 450; // 4.5 intervals: more than the 3 kept ones
    await expect(store.refund!('b', r, receipt, 7)).resolves.toBe(true);
    // owed: 10 intervals less 4.5 = 5.5, of the 7: the bucket holds 4.5 + 5.5 = 10
    expect(await remaining(store, 'b', r)).toBe(10);
    nowMs += 1_000;
  });

  test('nothing once the whole take had time to refill', async () => {
    const receipt = await taken(store, 'c', r, 5);
    nowMs += 600;
    await expect(store.refund!('c', r, receipt, 3)).resolves.toBe(false);
    expect(await remaining(store, 'c', r)).toBe(10);
  });
});
