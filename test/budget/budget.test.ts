import { randomUUID } from 'node:crypto';

import { type DecisionEvent, type RateLimitStore } from '../../src';
import { sleep, waitFor } from '../support/processes';
import { closeClients } from '../support/redis';
import { codeOf, budgetPerTest, SERVER_KINDS, type ServerKind } from '../support/budget-servers';

/*
 * The operation cost budget through both plugins (Apollo Server and GraphQL Yoga), on real
 * Redis: priced before it runs, refused before any resolver, refunded to its actual cost.
 * A budget of 100 an hour refills one point per 36 s, so nothing refills during a test.
 */

afterAll(closeClients);

const HOURLY = { limit: 100, window: 3600 };

describe.each(SERVER_KINDS)('%s', (kind: ServerKind) => {
  const { serve, store: served, team, left } = budgetPerTest(kind, HOURLY);

  test('a list that returned 3 of first: 50 refunds 47, and the next operation sees it', async () => {
    const s = await serve({});
    const t = team();
    const first = await s.run('{ items(first: 50, returned: 3) { id } }', t);
    expect(first.body.extensions?.cost).toEqual({
      requestedQueryCost: 50,
      actualQueryCost: 3,
      throttleStatus: { maximumAvailable: 100, currentlyAvailable: 97, restoreRate: 100 / 3600 },
    });
    expect(first.header('ratelimit-policy')).toBe('"budget";q=100;w=3600');
    expect(first.header('ratelimit')).toMatch(/^"budget";r=97;t=\d+$/);
    const second = await s.run('{ items(first: 50, returned: 3) { id } }', t);
    expect(second.body.extensions?.cost.throttleStatus.currentlyAvailable).toBe(94);
    expect(await left(t)).toBe(94);
  });

  test('an operation that does not fit is refused before any resolver runs, counting nothing', async () => {
    const s = await serve({});
    const t = team();
    await s.run('{ items(first: 60) { id } }', t);
    expect(await left(t)).toBe(40);
    const refused = await s.run('{ items(first: 50) { id } limited }', t);
    expect(refused.status).toBe(200);
    expect(refused.body.data ?? null).toBeNull();
    expect(refused.body.errors?.[0]?.extensions).toMatchObject({
      code: 'RATE_LIMITED',
      action: 'budget',
      limit: 100,
      window: 3600,
    });
    const retryAfter = refused.body.errors?.[0]?.extensions?.retryAfter as number;
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(refused.header('retry-after')).toBe(String(retryAfter));
    expect(refused.header('ratelimit-policy')).toBe('"budget";q=100;w=3600');
    expect(refused.body.extensions?.cost).toEqual({
      requestedQueryCost: 50,
      actualQueryCost: null,
      throttleStatus: { maximumAvailable: 100, currentlyAvailable: 40, restoreRate: 100 / 3600 },
    });
    // no resolver ran, and the field limit of `limited` counted nothing
    expect(s.runs).toMatchObject({ items: 1, limited: 0 });
    expect(await left(t, 'lim')).toBe(5);
    expect(await left(t)).toBe(40);
  });

  test('an estimate above maxCost or above limit: COST_ESTIMATED_TOO_EXPENSIVE, nothing taken', async () => {
    const s = await serve({ budget: { ...HOURLY, maxCost: 60 } });
    const t = team();
    const heavy = await s.run('{ heavy { id } }', t);
    expect(heavy.body.errors?.[0]?.extensions).toEqual({
      code: 'COST_ESTIMATED_TOO_EXPENSIVE',
      cost: 500,
      maxCost: 60,
      limit: 100,
    });
    expect(codeOf(await s.run('{ items(first: 61) { id } }', t))).toBe(
      'COST_ESTIMATED_TOO_EXPENSIVE',
    );
    expect(s.runs).toMatchObject({ heavy: 0, items: 0 });
    expect(await left(t)).toBe(100);
    expect(codeOf(await s.run('{ items(first: 60) { id } }', t))).toBeUndefined();
    expect(await left(t)).toBe(40);
  });

  test('an operation that cannot be priced, or has no identity, is refused and takes nothing', async () => {
    const s = await serve({});
    const t = team();
    expect(codeOf(await s.run('{ search(first: 1, last: 1) { id } }', t))).toBe(
      'COST_QUERY_PARSE_FAILURE',
    );
    expect(codeOf(await s.run('{ items(first: 5) { id } }'))).toBe('UNAUTHENTICATED');
    expect(s.runs).toMatchObject({ search: 0, items: 0 });
    expect(await left(t)).toBe(100);
  });

  test('a mutation costs 10 more; an estimate of 0 asks no store', async () => {
    const s = await serve({});
    const t = team();
    const mutation = await s.run('mutation { touch { id } }', t);
    expect(mutation.body.extensions?.cost).toMatchObject({
      requestedQueryCost: 11,
      actualQueryCost: 11,
    });
    const calls = { take: 0, hit: 0 };
    const store = served();
    const counted: RateLimitStore = {
      ...store,
      take: (...a) => (calls.take++, store.take!(...a)),
      hit: (...a) => (calls.hit++, store.hit(...a)),
    };
    await s.stop();
    const free = await (await serve({ store: counted })).run('{ __typename }', t);
    expect(free.body.extensions?.cost).toEqual({
      requestedQueryCost: 0,
      actualQueryCost: 0,
      throttleStatus: { maximumAvailable: 100, currentlyAvailable: null, restoreRate: 100 / 3600 },
    });
    expect(calls).toEqual({ take: 0, hit: 0 });
  });

  test('onDecision sees the take; a field limit more constrained names its own policy', async () => {
    const events: DecisionEvent[] = [];
    const s = await serve({ onDecision: (e) => events.push(e) });
    const t = team();
    const both = await s.run('{ items(first: 2) { id } limited }', t);
    const budget = events.find((e) => e.field === 'budget');
    expect(budget).toMatchObject({ identity: t, allowed: true, cost: 2, remaining: 98 });
    expect(budget?.rule).toMatchObject({ action: 'budget', limit: 100, windowSeconds: 3600 });
    // 98 points are 49 more of this operation; `lim` has 4 hits left
    expect(both.header('ratelimit-policy')).toBe('"lim";q=5;w=60');
  });

  test('by: the budget counts against an identities source, called with the context', async () => {
    const org = `org-${randomUUID()}`;
    const s = await serve({
      identities: { org: (context: { team?: string }) => context.team && org },
      budget: { ...HOURLY, by: 'org' },
    });
    await s.run('{ items(first: 30) { id } }', team());
    await s.run('{ items(first: 20) { id } }', team());
    expect((await s.peek({ identity: org, action: 'budget', by: 'org' }))[0]?.remaining).toBe(50);
  });

  test('dryRun measures but never refuses', async () => {
    const events: DecisionEvent[] = [];
    const s = await serve({
      dryRun: true,
      budget: { ...HOURLY, maxCost: 60 },
      onDecision: (e) => events.push(e),
    });
    const t = team();
    await s.run('{ items(first: 60) { id } }', t);
    const over = await s.run('{ items(first: 50) { id } }', t);
    expect(over.body.errors).toBeUndefined();
    expect(over.body.extensions?.cost).toMatchObject({
      requestedQueryCost: 50,
      actualQueryCost: 50,
    });
    expect(events.at(-1)).toMatchObject({ field: 'budget', allowed: false, dryRun: true });
    expect(codeOf(await s.run('{ heavy { id } }', t))).toBeUndefined();
    expect(s.runs).toMatchObject({ items: 2, heavy: 1 });
    expect(await left(t)).toBe(40);
  });

  test('status429: a refused operation answers 429 with Retry-After', async () => {
    const s = await serve({ status429: true });
    const t = team();
    await s.run('{ items(first: 90) { id } }', t);
    const refused = await s.run('{ items(first: 20) { id } }', t);
    expect(refused.status).toBe(429);
    expect(Number(refused.header('retry-after'))).toBeGreaterThanOrEqual(1);
  });

  test('a refund after the window rolled over gives nothing to the new window', async () => {
    const s = await serve({ budget: { limit: 10, window: 1, algorithm: 'FIXED_WINDOW' } });
    const t = team();
    // takes 5 in this window, returns 2 once the test opens the gate
    const held = s.run('{ gated(first: 5, returned: 2) { id } }', t);
    await waitFor('the gated resolver', () => s.runs.gated === 1);
    await sleep(1_100);
    expect(await left(t)).toBe(10);
    await s.run('{ items(first: 4) { id } }', t);
    s.gate.open();
    const late = await held;
    // its 3 unused points belonged to the window that ended: the new one holds exactly 4, and
    // the late operation reports the budget as it stands, in the new window
    expect(late.body.extensions?.cost).toMatchObject({
      requestedQueryCost: 5,
      actualQueryCost: 2,
      throttleStatus: { currentlyAvailable: 6 },
    });
    expect(await left(t)).toBe(6);
  });
});
