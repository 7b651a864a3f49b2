import { createMemoryStore, createRedisStore, rateLimitDirective } from '../../src';
import type { OperationLimits } from '../../src/stores/store';
import type { RateLimitStore } from '../../src/stores/store';
import { serveBudget, type BudgetServer, type ServerKind } from '../support/budget-servers';
import { connectRedis, ownRedis, scriptCalls } from '../support/redis';
import { freshStore, STORE_KINDS } from '../support/stores';

/*
 * GitHub's secondary limits (`budget.inFlight`, `budget.time`) on one Redis and on the memory
 * store: one store call decides the budget, the time and the slot, all or nothing; one settles
 * them. The multi-process promises are in secondary-processes.test.ts.
 */

const redis = ownRedis();
const identity = 'team-a';
const budgetRule = {
  action: 'budget',
  algorithm: 'TOKEN_BUCKET' as const,
  windowSeconds: 3600,
  limit: 100,
  cost: 1,
};
const limits = (units: number, slots = 2, limitMs = 1000, reserveMs = 100): OperationLimits => ({
  budget: { rule: budgetRule, units },
  time: {
    action: 'time',
    algorithm: 'TOKEN_BUCKET',
    windowSeconds: 60,
    limit: limitMs,
    cost: reserveMs,
  },
  inFlight: {
    action: 'inFlight',
    algorithm: 'CONCURRENCY',
    windowSeconds: 10,
    limit: slots,
    cost: 1,
  },
});

describe.each(STORE_KINDS)('the %s store', (kind) => {
  let store: RateLimitStore;
  beforeEach(async () => {
    ({ store } = await freshStore(kind));
  });
  const admit = (l: OperationLimits) => store.admitOperation!(identity, l);

  test('a refusal by one policy takes nothing from the others', async () => {
    const first = await admit(limits(10));
    const second = await admit(limits(10));
    expect([first.allowed, second.allowed]).toEqual([true, true]);
    const refused = await admit(limits(10));
    expect(refused.allowed).toBe(false);
    // budget, time, in flight: only the slots refused
    expect(refused.limits.map((s) => s.retryAfterMs > 0)).toEqual([false, false, true]);
    expect(refused.limits[0]?.remaining).toBe(80);
    expect(refused.limits[1]?.remaining).toBe(800);
    // its refusal took none of the budget's points and none of the time
    const third = await store.settleOperation!(identity, limits(10), first.ticket!, {
      budgetUnits: 0,
      timeMs: 100,
    });
    expect(third[0]?.remaining).toBe(80);
    expect(third[2]?.remaining).toBe(1);
    // its slot released, the next one is admitted
    expect((await admit(limits(10))).allowed).toBe(true);
  });

  test('time beyond the reservation is debt: the next operation waits until it is restored', async () => {
    const l = limits(1, 5, 1000, 100);
    const admitted = await admit(l);
    const settled = await store.settleOperation!(identity, l, admitted.ticket!, {
      budgetUnits: 1,
      timeMs: 1500,
    });
    // 1000 ms per 60 s, 1500 charged: 500 ms of debt
    expect(settled[1]?.remaining).toBeLessThanOrEqual(-499);
    expect(settled[0]?.remaining).toBe(100);
    const refused = await admit(l);
    expect(refused.allowed).toBe(false);
    expect(refused.limits.map((s) => s.retryAfterMs > 0)).toEqual([false, true, false]);
    // 600 ms of execution time restore in 36 s at 1000 ms per 60 s
    expect(refused.limits[1]?.retryAfterMs).toBeGreaterThan(30_000);
    expect(refused.limits[1]?.retryAfterMs).toBeLessThanOrEqual(36_000);
    // a refusal reports the budget as it stood: its 1 point refunded, nothing taken
    expect(refused.limits[0]?.remaining).toBe(100);
  });

  test('time shorter than the reservation is refunded', async () => {
    const l = limits(1, 5, 1000, 400);
    const admitted = await admit(l);
    expect(admitted.limits[1]?.remaining).toBe(600);
    const settled = await store.settleOperation!(identity, l, admitted.ticket!, {
      budgetUnits: 0,
      timeMs: 50.5,
    });
    expect(settled[1]?.remaining).toBeGreaterThanOrEqual(949);
    expect(settled[1]?.remaining).toBeLessThanOrEqual(950);
  });
});

describe.each<ServerKind>(['apollo', 'yoga'])('%s with budget.inFlight and budget.time', (host) => {
  let server: BudgetServer;
  afterEach(() => server?.stop());

  test('a refused operation is a 429 naming its policy, runs nothing and charges nothing', async () => {
    const store = createMemoryStore();
    server = await serveBudget(host, {
      store,
      status429: true,
      budget: {
        limit: 100,
        window: 3600,
        inFlight: { limit: 2 },
        time: { seconds: 10, window: 60 },
      },
    });
    const held = [1, 2].map(() => server.run('{ gated(first: 5, returned: 1) { id } }', 'a'));
    await waitUntil(() => server.runs.gated === 2);
    const refused = await server.run('{ items(first: 5) { id } }', 'a');
    expect(refused.status).toBe(429);
    expect(refused.body.errors?.[0]?.extensions).toMatchObject({
      code: 'RATE_LIMITED',
      action: 'inFlight',
      policy: 'inFlight',
      reason: 'CONCURRENCY',
    });
    expect(Number(refused.header('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(server.runs.items).toBe(0);
    server.gate.open();
    const done = await Promise.all(held);
    for (const r of done) {
      expect(r.status).toBe(200);
      expect(r.body.extensions?.executionTime).toMatchObject({
        reservedMs: 100,
        throttleStatus: { maximumAvailable: 10_000, restoreRate: 10_000 / 60 },
      });
      expect(r.body.extensions?.executionTime?.chargedMs).toBeGreaterThan(0);
      expect(r.body.extensions?.cost).toMatchObject({ requestedQueryCost: 5, actualQueryCost: 1 });
    }
    // the refused operation took no points: 2 ran, each kept 1 of its 5
    const after = await server.run('{ items(first: 1) { id } }', 'a');
    expect(after.body.extensions?.cost?.throttleStatus?.currentlyAvailable).toBe(97);
    expect(after.header('ratelimit-policy')).toMatch(/^"(budget|inFlight|time)"/);
  });

  test('an operation costs the store two calls: one before, one after', async () => {
    const client = await connectRedis({}, redis.url());
    const store = createRedisStore({ client, prefix: `p-${host}:` });
    await store.ready();
    server = await serveBudget(host, {
      store,
      budget: {
        limit: 100,
        window: 3600,
        inFlight: { limit: 2 },
        time: { seconds: 10, window: 60 },
      },
    });
    const before = await scriptCalls(client);
    for (let i = 0; i < 5; i++) {
      const r = await server.run('{ items(first: 5, returned: 2) { id } }', 'a');
      expect(r.status).toBe(200);
    }
    expect((await scriptCalls(client)) - before).toBe(10);
    await store.close();
  });
});

test('bad options are refused at construction, naming the option', () => {
  const store = createMemoryStore();
  const make = (budget: object) => () =>
    rateLimitDirective({ store, budget: { limit: 10, window: 60, ...budget } });
  expect(make({ inFlight: { limit: 0 } })).toThrow(/budget\.inFlight\.limit/);
  expect(make({ inFlight: { limit: 2, leaseSeconds: -1 } })).toThrow(
    /budget\.inFlight\.leaseSeconds/,
  );
  expect(make({ time: { seconds: 0, window: 60 } })).toThrow(/budget\.time\.seconds/);
  expect(make({ time: { seconds: 1, window: 60, reserveMs: 5000 } })).toThrow(
    /budget\.time\.reserveMs/,
  );
  expect(make({ time: { seconds: 1, window: 0 } })).toThrow(/budget\.time\.window/);
  expect(make({ time: { seconds: 1, window: 60, penalty: 1 } })).toThrow(
    /budget\.time\.penalty is not an option/,
  );
  const bare = { hit: store.hit.bind(store) };
  expect(() =>
    rateLimitDirective({ store: bare, budget: { limit: 10, window: 60, inFlight: { limit: 1 } } }),
  ).toThrow(/admitOperation/);
});

async function waitUntil(done: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !done(); i++) await new Promise((r) => setTimeout(r, 10));
  if (!done()) throw new Error('waited 2 s in vain');
}
