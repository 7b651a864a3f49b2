import type { ExecutionResult, GraphQLSchema } from 'graphql';

import {
  createMemoryStore,
  rateLimitDirective,
  type DecisionEvent,
  type RateLimitRule,
} from '../../src';
import { leaseCalls } from '../support/lease-calls';
import { gate } from '../support/running-calls';
import { closeClients } from '../support/redis';
import { sleep, waitFor } from '../support/processes';
import { codes, limitedSchema, run } from '../support/schema';
import { freshStore, STORE_KINDS, type StoreUnderTest } from '../support/stores';

/*
 * CONCURRENCY on one process, on every store: the slots a field holds while its resolver runs,
 * and how each way a call ends frees its slot. Decisions get a generous timeoutMs: none of these tests is
 * about a deadline, and a loaded machine must not turn a decision into RATE_LIMIT_UNAVAILABLE. Across processes and on a Cluster:
 * test/concurrency/processes.test.ts.
 */

afterAll(closeClients);

const ctx = (id = 'team-1', extra: object = {}) => ({ team: { id }, ...extra });
const LEASE = 'window: 2, algorithm: CONCURRENCY';
const slotRule: RateLimitRule = {
  action: 'slots',
  algorithm: 'CONCURRENCY',
  windowSeconds: 2,
  limit: 3,
  cost: 1,
};

/** Starts `n` calls of `query` at once; `decided()` resolves once each ran or was answered. */
function start(schema: GraphQLSchema, query: string, n: number, slow: { running: number }) {
  let answered = 0;
  const before = slow.running;
  const results = Array.from({ length: n }, () =>
    run(schema, query, ctx()).then((r) => {
      answered++;
      return r;
    }),
  );
  return {
    results: Promise.all(results),
    decided: () => waitFor(`${n} calls decided`, () => slow.running - before + answered >= n),
  };
}

const refusals = (results: ExecutionResult[]) =>
  results.flatMap((r) => r.errors ?? []).filter((e) => e.extensions?.code === 'RATE_LIMITED');

describe.each(STORE_KINDS)('%s store', (kind) => {
  let s: StoreUnderTest;
  beforeEach(async () => {
    s = await freshStore(kind);
  });

  const rule = (over: Partial<RateLimitRule> = {}): RateLimitRule => ({
    action: 'slots',
    algorithm: 'CONCURRENCY',
    windowSeconds: 2,
    limit: 3,
    cost: 1,
    ...over,
  });

  test('a hit takes a slot under a lease; release frees it at once, and a release again frees nothing', async () => {
    const held = await Promise.all(Array.from({ length: 5 }, () => s.store.hit('id', [rule()])));
    expect(held.filter((d) => d.allowed)).toHaveLength(3);
    const blocked = held.find((d) => !d.allowed);
    // the oldest lease in the way expires within the lease time
    expect(blocked?.limits[0]?.retryAfterMs).toBeGreaterThan(0);
    expect(blocked?.limits[0]?.retryAfterMs).toBeLessThanOrEqual(2_000);
    expect(blocked?.lease).toBeUndefined();
    const first = held.find((d) => d.allowed)?.lease;
    if (!first || !s.store.release) throw new Error('an allowed CONCURRENCY hit holds a lease');
    await s.store.release(first);
    await s.store.release(first);
    const again = await Promise.all(Array.from({ length: 3 }, () => s.store.hit('id', [rule()])));
    expect(again.filter((d) => d.allowed)).toHaveLength(1);
  });

  test('peek counts the slots in use and the oldest lease; reset frees them', async () => {
    await s.store.hit('id', [rule()]);
    await sleep(300);
    await s.store.hit('id', [rule()]);
    const [state] = (await s.store.peek?.('id', [rule()])) ?? [];
    expect(state?.remaining).toBe(1);
    // the oldest of the two was taken 300 ms before the other
    expect(state?.resetMs).toBeGreaterThan(1_000);
    expect(state?.resetMs).toBeLessThanOrEqual(1_750);
    await s.store.reset?.('id', [rule()]);
    expect(await s.store.peek?.('id', [rule()])).toEqual([
      { remaining: 3, resetMs: 0, retryAfterMs: 0 },
    ]);
  });

  test('a lease not renewed expires after the lease time; a renewed one does not', async () => {
    const r = rule({ windowSeconds: 1, limit: 2 });
    const kept = await s.store.hit('id', [r]);
    const dropped = await s.store.hit('id', [r]);
    if (!kept.lease || !dropped.lease) throw new Error('both hits hold a lease');
    await sleep(600);
    expect(await s.store.renew?.(kept.lease)).toBe(true);
    await sleep(600);
    // 1.2 s after the take: the lease renewed at 0.6 s lives on, the other has expired
    expect(await s.store.peek?.('id', [r])).toMatchObject([{ remaining: 1 }]);
    // an expired slot is never brought back
    expect(await s.store.renew?.(dropped.lease)).toBe(false);
    expect(await s.store.peek?.('id', [r])).toMatchObject([{ remaining: 1 }]);
  });

  test('at most `limit` resolvers run at once, and slots free as calls end', async () => {
    const slow = gate();
    const schema = limitedSchema(
      `type Query { slow: Boolean @rateLimit(action: "slow", limit: 3, ${LEASE}) }`,
      { Query: { slow: slow.resolve } },
      { store: s.store, timeoutMs: 5_000 },
    );
    const first = start(schema, '{ slow }', 8, slow);
    await first.decided();
    expect(slow.running).toBe(3);
    slow.open();
    const results = await first.results;
    expect(results.filter((r) => r.data?.slow === true)).toHaveLength(3);
    const [refusal] = refusals(results);
    expect(refusal?.extensions).toMatchObject({
      code: 'RATE_LIMITED',
      reason: 'CONCURRENCY',
      action: 'slow',
      limit: 3,
      window: 2,
    });
    expect(refusal?.extensions?.retryAfter).toBeGreaterThanOrEqual(1);
    expect(refusal?.extensions?.retryAfter).toBeLessThanOrEqual(2);
    expect(slow.most).toBe(3);
    // every slot was released when its call ended: a whole limit runs again
    slow.close();
    const next = start(schema, '{ slow }', 4, slow);
    await next.decided();
    expect(slow.running).toBe(3);
    slow.open();
    expect((await next.results).filter((r) => r.data?.slow === true)).toHaveLength(3);
  });

  test('a throwing resolver and a nulled parent free their slot at once', async () => {
    let calls = 0;
    const schema = limitedSchema(
      `type Query {
        boom: Boolean @rateLimit(action: "one", limit: 1, ${LEASE})
        syncBoom: Boolean @rateLimit(action: "one", limit: 1, ${LEASE})
        parent: Parent
      }
      type Parent {
        work: Boolean @rateLimit(action: "one", limit: 1, ${LEASE})
        broken: Boolean!
      }`,
      {
        Query: {
          boom: async () => {
            calls++;
            await sleep(10);
            throw new Error('boom');
          },
          syncBoom: () => {
            calls++;
            throw new Error('sync boom');
          },
          parent: () => ({}),
        },
        Parent: {
          work: async () => {
            calls++;
            await sleep(50);
            return true;
          },
          broken: () => null,
        },
      },
      { store: s.store, timeoutMs: 5_000 },
    );
    for (const query of ['{ boom }', '{ syncBoom }', '{ parent { work broken } }']) {
      for (let i = 0; i < 2; i++) {
        const result = await run(schema, query, ctx());
        expect(codes(result)).not.toContain('RATE_LIMITED');
        expect(result.errors).toHaveLength(1);
      }
    }
    expect(calls).toBe(6);
  });

  test("the operation's abort signal frees no slot while its resolver runs; settling does", async () => {
    const slow = gate();
    const schema = limitedSchema(
      `type Query { slow: Boolean @rateLimit(action: "abort", limit: 1, ${LEASE}) }`,
      { Query: { slow: slow.resolve } },
      { store: s.store, timeoutMs: 5_000 },
    );
    const rule: RateLimitRule = { ...slotRule, action: 'abort', limit: 1 };
    const free = async () => ((await s.store.peek?.('team-1', [rule])) ?? [])[0]?.remaining;
    const client = new AbortController();
    const gone = run(schema, '{ slow }', ctx('team-1', { request: { signal: client.signal } }));
    await waitFor('the call to run', () => slow.running === 1);
    client.abort();
    // the client left, the resolver runs on: its slot is still held, a second call is refused
    await sleep(100);
    expect(await free()).toBe(0);
    expect(codes(await run(schema, '{ slow }', ctx()))).toEqual(['RATE_LIMITED']);
    expect(slow.running).toBe(1);
    slow.open();
    await gone;
    // the resolver settled: its slot is free
    expect(await free()).toBe(1);
    expect((await run(schema, '{ slow }', ctx())).data).toEqual({ slow: true });
    expect(slow.most).toBe(1);
    // an operation aborted before its field started never runs it, and takes no slot
    const aborted = AbortSignal.abort();
    const refused = await run(schema, '{ slow }', ctx('team-1', { signal: aborted }));
    expect(refused.data).toEqual({ slow: null });
    expect((await run(schema, '{ slow }', ctx())).data).toEqual({ slow: true });
  });

  test('a reset stops the renewals of the slots it freed', async () => {
    const slow = gate();
    const r = rule({ action: 'reset-renew', windowSeconds: 1, limit: 1 });
    const store = s.store;
    const { store: counted, renewals } = leaseCalls(store);
    const schema = limitedSchema(
      'type Query { slow: Boolean @rateLimit(action: "reset-renew", limit: 1, window: 1, algorithm: CONCURRENCY) }',
      { Query: { slow: slow.resolve } },
      { store: counted, identify: () => 'team-1', timeoutMs: 5_000 },
    );
    const call = run(schema, '{ slow }');
    await waitFor('a renewal', () => renewals.length >= 1);
    await store.reset?.('team-1', [r]);
    await waitFor('a renewal that finds the lease gone', () => renewals.includes(false));
    const asked = renewals.length;
    // two more lease intervals (1/3 s each): no renewal was sent
    await sleep(800);
    expect(renewals).toHaveLength(asked);
    expect(await store.peek?.('team-1', [r])).toMatchObject([{ remaining: 1 }]);
    slow.open();
    expect((await call).data).toEqual({ slow: true });
  });

  test('with a rate limit on the same field: all or nothing, and a blocked hit holds no slot', async () => {
    const slow = gate();
    const events: DecisionEvent[] = [];
    const schema = limitedSchema(
      `type Query {
        ai: Boolean @rateLimit(action: "ai-rate", window: 60, limit: 4)
                    @rateLimit(action: "ai-flight", limit: 2, ${LEASE})
      }`,
      { Query: { ai: slow.resolve } },
      { store: s.store, timeoutMs: 5_000, onDecision: (event) => events.push(event) },
    );
    const first = start(schema, '{ ai }', 3, slow);
    await first.decided();
    expect(slow.running).toBe(2);
    slow.open();
    await first.results;
    // the call refused for concurrency took nothing of the rate: 2 of 4 were used
    const later = await Promise.all(Array.from({ length: 3 }, () => run(schema, '{ ai }', ctx())));
    expect(later.filter((r) => r.data?.ai === true)).toHaveLength(2);
    const [rate] = refusals(later);
    expect(rate?.extensions?.reason).toBeUndefined();
    expect(rate?.extensions?.action).toBe('ai-rate');
    // the rate limit refused the last with its slot free: it holds none
    expect(await s.store.peek?.('team-1', [rule({ action: 'ai-flight', limit: 2 })])).toMatchObject(
      [{ remaining: 2 }],
    );
    expect(events.filter((e) => !e.allowed).map((e) => e.reason)).toEqual(['CONCURRENCY', 'RATE']);
  });
});

test('a budget cannot count in flight', () => {
  expect(() =>
    rateLimitDirective({
      store: createMemoryStore(),
      budget: { limit: 10, window: 60, algorithm: 'CONCURRENCY' },
    }),
  ).toThrow(/budget\.algorithm "CONCURRENCY" is not for a budget/);
});
