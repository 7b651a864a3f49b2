import { randomUUID } from 'node:crypto';

import { LEASE, LIMITS } from '../../kit/conformance-app';
import { releaseTogether } from '../support/barrier';
import { sleep, waitFor } from '../support/processes';
import { closeClients } from '../support/redis';
import { HOSTS, type Body, type Served } from './hosts';
import { NEST_HOSTS } from './nest-hosts';

/*
 * The contract every integration keeps, written once and run on every host (./hosts.ts): the
 * app of kit/conformance-app.js, served as a user wires the library into that host, hit over
 * HTTP (and its subscription transport) as identities of the test's own. A new integration is
 * done when it passes this file unchanged.
 */

afterAll(closeClients);

const fresh = (): string => `id-${randomUUID()}`;

const single = (response: { body: Body | Body[] }): Body => {
  if (Array.isArray(response.body)) throw new Error('expected one response, got a batch');
  return response.body;
};

/** The value of `field` in a response, else the code of its first error. */
const outcome = (body: Body, field: string): unknown =>
  body.data?.[field] ?? body.errors?.[0]?.extensions?.code ?? body.errors?.[0]?.message;

const passes = (outcomes: readonly unknown[]): unknown[] =>
  outcomes.filter((o) => o !== 'RATE_LIMITED');

/** How many more times each resolver ran during `act`. */
async function ranDuring(served: Served, act: () => Promise<unknown>) {
  const before = await served.runs();
  await act();
  const after = await served.runs();
  return (coordinate: string): number => (after[coordinate] ?? 0) - (before[coordinate] ?? 0);
}

const ITEMS = (first: number, returned = first) =>
  `{ items(first: ${first}, returned: ${returned}) { id } }`;

describe.each([...HOSTS, ...NEST_HOSTS])('$name', (host) => {
  let served: Served;
  beforeAll(async () => {
    served = await host.start({ replace: false });
  }, 60_000);
  afterAll(async () => {
    await served?.stop();
  });

  test('exactly `limit` of 12 simultaneous hits of one identity pass', async () => {
    const identity = fresh();
    let outcomes: unknown[] = [];
    const ran = await ranDuring(served, async () => {
      const responses = await releaseTogether(
        12,
        async () => () => served.post({ query: '{ hit }' }, identity),
      );
      outcomes = responses.map((r) => outcome(single(r), 'hit'));
    });
    expect(passes(outcomes)).toHaveLength(LIMITS.hit);
    expect(passes(outcomes).every((o) => typeof o === 'number')).toBe(true);
    expect(outcomes.filter((o) => o === 'RATE_LIMITED')).toHaveLength(12 - LIMITS.hit);
    expect(ran('Query.hit')).toBe(LIMITS.hit);
  });

  test('aliases of one field are counted apart', async () => {
    const identity = fresh();
    let body: Body = {};
    const ran = await ranDuring(served, async () => {
      body = single(
        await served.post({ query: '{ a: hit b: hit c: hit d: hit e: hit }' }, identity),
      );
    });
    const values = Object.values(body.data ?? {}).filter((v) => typeof v === 'number');
    expect(values).toHaveLength(LIMITS.hit);
    expect(body.errors?.map((e) => e.extensions?.code)).toEqual(
      Array<string>(5 - LIMITS.hit).fill('RATE_LIMITED'),
    );
    expect(ran('Query.hit')).toBe(LIMITS.hit);
  });

  if (host.batching) {
    test('each operation of a batch is charged: its fields and the budget', async () => {
      const identity = fresh();
      const bumps = await served.post(
        Array.from({ length: 5 }, () => ({ query: 'mutation { bump }' })),
        identity,
      );
      expect(Array.isArray(bumps.body)).toBe(true);
      expect(passes((bumps.body as Body[]).map((b) => outcome(b, 'bump')))).toHaveLength(
        LIMITS.bump,
      );
      // 5 operations priced 30 on a budget of 100: 3 pass
      const items = await served.post(
        Array.from({ length: 5 }, () => ({ query: ITEMS(30) })),
        fresh(),
      );
      expect(passes((items.body as Body[]).map((b) => outcome(b, 'items')))).toHaveLength(3);
    });
  }

  test('a blocked operation takes nothing: what it was refused is still there', async () => {
    const identity = fresh();
    const seen: unknown[] = [];
    const ran = await ranDuring(served, async () => {
      for (const query of [ITEMS(60), ITEMS(60), ITEMS(40), ITEMS(1)]) {
        const body = single(await served.post({ query }, identity));
        seen.push(
          Array.isArray(body.data?.items) ? body.data.items.length : outcome(body, 'items'),
        );
      }
    });
    expect(seen).toEqual([60, 'RATE_LIMITED', 40, 'RATE_LIMITED']);
    expect(ran('Query.items')).toBe(2);
  });

  test("variables that do not coerce: GraphQL's error, no resolver run, nothing charged", async () => {
    const identity = fresh();
    // priced 61 of 100 (an input object 1, 60 items): once charged, a second cannot pass
    const query =
      'query ($f: Filter!) { lookup(filter: $f) items(first: 60, returned: 60) { id } }';
    const refused: Body[] = [];
    const ran = await ranDuring(served, async () => {
      // graphql-jit takes a list for an input object; a host may compile on a repeat
      for (let i = 0; i < 3; i++) {
        refused.push(single(await served.post({ query, variables: { f: [] } }, identity)));
      }
    });
    for (const body of refused) {
      expect(body.data ?? null).toBeNull();
      expect(body.errors?.[0]?.message).toMatch(/Variable "\$f" got invalid value/);
    }
    expect(ran('Query.lookup')).toBe(0);
    expect(ran('Query.items')).toBe(0);
    const good = [];
    for (let i = 0; i < 2; i++) {
      const body = single(await served.post({ query, variables: { f: { id: '1' } } }, identity));
      good.push(typeof body.data?.lookup === 'number' ? 'ran' : outcome(body, 'lookup'));
    }
    expect(good).toEqual(['ran', 'RATE_LIMITED']);
  });

  test('a refund is never below what ran (a response key is no proof of a type)', async () => {
    const identity = fresh();
    // a Dear (40) whose `name` answers as `__typename`: "Cheap" (1)
    const query =
      '{ found(dear: true) { ... on Dear { __typename: name } ... on Cheap { name } } }';
    const seen: unknown[] = [];
    const ran = await ranDuring(served, async () => {
      for (let i = 0; i < 3; i++) {
        const body = single(await served.post({ query }, identity));
        seen.push(body.data?.found ? 'ran' : outcome(body, 'found'));
      }
    });
    // 40 + 40 of 100: the third does not fit (a host may refuse the document: it ran nothing)
    expect(seen[2]).toBe('RATE_LIMITED');
    expect(ran('Query.found')).toBeLessThanOrEqual(2);
  });

  test('a resolver replaced after the library wrapped it never runs unlimited', async () => {
    let replaced: Served | undefined;
    let seen: string[];
    try {
      replaced = await host.start({ replace: true });
    } catch (error) {
      seen = [(error as Error).message];
    }
    try {
      if (replaced) {
        const identity = fresh();
        seen = [];
        for (let i = 0; i < LIMITS.replaced + 2; i++) {
          const body = single(await replaced.post({ query: '{ replaced }' }, identity));
          seen.push(body.errors?.[0]?.message ?? `ran: ${JSON.stringify(body.data)}`);
        }
        expect((await replaced.runs())['Query.replaced (replacement)'] ?? 0).toBe(0);
      }
      // refused at start, or every hit refused, naming the field
      for (const message of seen!) expect(message).toMatch(/Query\.replaced/);
    } finally {
      await replaced?.stop();
    }
  }, 60_000);

  test('CONCURRENCY: of 5 simultaneous calls, never more than `limit` run at once', async () => {
    const identity = fresh();
    let outcomes: unknown[] = [];
    const ran = await ranDuring(served, async () => {
      const responses = await releaseTogether(
        5,
        async () => () => served.post({ query: '{ slow(ms: 1000) }' }, identity),
      );
      outcomes = responses.map((r) => outcome(single(r), 'slow'));
    });
    // counted by the work itself (on NestJS, an Observable's: it runs once Nest subscribes)
    expect((await served.runs())['Query.slow most']).toBe(LIMITS.slow);
    expect(passes(outcomes).length).toBeGreaterThanOrEqual(1);
    expect(passes(outcomes).every((o) => typeof o === 'number')).toBe(true);
    expect(ran('Query.slow')).toBe(passes(outcomes).length);
  });

  test('CONCURRENCY: a client that leaves mid-call frees no slot while its resolver runs', async () => {
    const identity = fresh();
    const running = async () => (await served.runs())['Query.slow running'] ?? 0;
    const client = new AbortController();
    const leaving = served
      .post({ query: '{ slow(ms: 2500) }' }, identity, client.signal)
      .catch(() => 'left');
    await waitFor('the first call to run', async () => (await running()) === 1, 10_000, 20);
    client.abort();
    expect(await leaving).toBe('left');
    // the host has seen the client leave; the resolver runs on, and so does its slot
    await sleep(300);
    const second = outcome(
      single(await served.post({ query: '{ slow(ms: 10) }' }, identity)),
      'slow',
    );
    expect(await running()).toBe(1);
    expect(second).toBe('RATE_LIMITED');
    expect((await served.runs())['Query.slow most']).toBe(LIMITS.slow);
    // once the resolver is done, the slot is free (released then, not at the lease's end)
    await waitFor('the first call to end', async () => (await running()) === 0, 10_000, 20);
    const third = single(await served.post({ query: '{ slow(ms: 10) }' }, identity));
    expect(typeof outcome(third, 'slow')).toBe('number');
  });

  if (host.subscriptions) {
    test('CONCURRENCY: a subscription start the host drops frees its slot within its lease', async () => {
      const { dropStart, subscribe } = served;
      if (!dropStart || !subscribe) throw new Error(`${host.name}: give its adapter dropStart`);
      const identity = fresh();
      const ran = await ranDuring(served, () => dropStart(identity));
      expect(ran('Subscription.live')).toBe(1);
      // a start as the same identity is admitted within the lease (a try a quarter of it apart)
      let admitted: unknown;
      await waitFor(
        'a start admitted',
        async () => {
          admitted = await (await subscribe(identity, 'subscription { live }'))();
          return admitted !== 'RATE_LIMITED';
        },
        LEASE * 1_000 + 3_000,
        (LEASE * 1_000) / 4,
      );
      expect(admitted).toBe('started');
      // one that is pulled keeps its slot past its lease: its client waits for events
      await sleep(LEASE * 1_000 + 500);
      expect(await (await subscribe(identity, 'subscription { live }'))()).toBe('RATE_LIMITED');
    });

    test('a Subscription field counts starts: exactly `limit` of 10 simultaneous', async () => {
      const subscribe = served.subscribe;
      if (!subscribe) throw new Error(`${host.name} serves subscriptions: give its adapter one`);
      const identity = fresh();
      let outcomes: unknown[] = [];
      const ran = await ranDuring(served, async () => {
        outcomes = await releaseTogether(10, () => subscribe(identity));
      });
      expect(outcomes.filter((o) => o === 'started')).toHaveLength(LIMITS.ticks);
      expect(outcomes.filter((o) => o !== 'started')).toEqual(
        Array<string>(10 - LIMITS.ticks).fill('RATE_LIMITED'),
      );
      expect(ran('Subscription.ticks')).toBe(LIMITS.ticks);
    });
  }
});
