import { isAsyncIterable } from '@graphql-tools/utils';
import { parse, subscribe, type ExecutionResult } from 'graphql';

import type { RateLimitRule, RateLimitStore } from '../../src';
import { releaseTogether } from '../support/barrier';
import { leaseCalls } from '../support/lease-calls';
import { sleep, waitFor } from '../support/processes';
import { closeClients } from '../support/redis';
import { limitedSchema } from '../support/schema';
import { freshStore } from '../support/stores';

/*
 * CONCURRENCY on a Subscription field counts live subscriptions per identity: the slot is taken
 * when the subscription starts and refunded when it ends, however it ends, through graphql-js'
 * own subscribe, as every server calls it.
 */

afterAll(closeClients);

const LIMIT = 3;
const SDL = `
  type Query { ok: Boolean }
  type Subscription {
    live: Int @rateLimit(action: "live", window: 30, limit: ${LIMIT}, algorithm: CONCURRENCY)
  }
`;

/** A source stream as a pubsub makes one: one event, then open until it is ended or closed. */
function source() {
  const waiting: ((step: Promise<IteratorResult<{ live: number }>>) => void)[] = [];
  let sent = false;
  let returned = 0;
  let over: Promise<IteratorResult<{ live: number }>> | undefined;
  const end = (step: Promise<IteratorResult<{ live: number }>>): void => {
    over = step;
    over.catch(() => undefined);
    for (const settle of waiting.splice(0)) settle(step);
  };
  const iterator: AsyncIterableIterator<{ live: number }> = {
    next: () => {
      if (!sent) return ((sent = true), Promise.resolve({ done: false, value: { live: 1 } }));
      return over ?? new Promise((resolve) => waiting.push(resolve));
    },
    return: () => (returned++, end(Promise.resolve({ done: true, value: undefined })), over!),
    [Symbol.asyncIterator]: () => iterator,
  };
  return {
    iterator,
    returned: () => returned,
    finish: () => end(Promise.resolve({ done: true, value: undefined })),
    fail: (error: Error) => end(Promise.reject(error)),
  };
}

async function app(sdl = SDL, wrap = (store: RateLimitStore) => store) {
  const store = wrap((await freshStore('redis')).store);
  const sources: ReturnType<typeof source>[] = [];
  const resolvers = {
    Subscription: {
      live: {
        subscribe: () => {
          const made = source();
          sources.push(made);
          return made.iterator;
        },
      },
    },
  };
  const schema = limitedSchema(sdl, resolvers, { store, identify: () => 'team' });
  const start = () =>
    subscribe({ schema, document: parse('subscription { live }'), contextValue: {} });
  return { sources, start, store };
}

type Started = AsyncGenerator<ExecutionResult> | ExecutionResult;

/** A start's first event (`'live'`), or the code and reason of the error it was answered with. */
async function outcome(result: Started): Promise<unknown> {
  if (!isAsyncIterable(result)) {
    const { code, reason } = result.errors?.[0]?.extensions ?? {};
    return `${String(code)} ${String(reason)}`;
  }
  const first = await result.next();
  return first.value?.data?.live === 1 ? 'live' : first;
}

test(`5 simultaneous subscriptions for ${LIMIT} slots: ${LIMIT} live; closing one admits another`, async () => {
  const { sources, start } = await app();
  const results = await releaseTogether(5, async () => () => start());
  const outcomes = await Promise.all(results.map(outcome));
  expect(outcomes.filter((o) => o === 'live')).toHaveLength(LIMIT);
  expect(outcomes.filter((o) => o !== 'live')).toEqual(Array(2).fill('RATE_LIMITED CONCURRENCY'));
  // a refused start made no source stream
  expect(sources).toHaveLength(LIMIT);
  // the slots are held while the subscriptions are live, not while they start
  expect(await outcome(await start())).toBe('RATE_LIMITED CONCURRENCY');
  const open = results.filter(isAsyncIterable) as AsyncGenerator<ExecutionResult>[];
  await open[0]!.return(undefined);
  const next = await start();
  expect(await outcome(next)).toBe('live');
  expect(await outcome(await start())).toBe('RATE_LIMITED CONCURRENCY');
  await Promise.all([...open.slice(1), next].map((s) => (s as AsyncGenerator).return(undefined)));
  // every slot is free again
  const again = await Promise.all(Array.from({ length: LIMIT }, start));
  expect(await Promise.all(again.map(outcome))).toEqual(Array(LIMIT).fill('live'));
});

test.each([
  ['throws', (s: ReturnType<typeof source>) => s.fail(new Error('the source broke'))],
  ['completes', (s: ReturnType<typeof source>) => s.finish()],
])('a source that %s frees its slot', async (_how, end) => {
  const { sources, start } = await app();
  // one after the other: the i-th source is the i-th subscription's
  const live: AsyncGenerator<ExecutionResult>[] = [];
  for (let i = 0; i < LIMIT; i++) live.push((await start()) as AsyncGenerator<ExecutionResult>);
  expect(await Promise.all(live.map(outcome))).toEqual(Array(LIMIT).fill('live'));
  expect(await outcome(await start())).toBe('RATE_LIMITED CONCURRENCY');
  end(sources[0]!);
  // the client sees the stream end (an error, or its completion), and then its slot is free
  const last = await live[0]!.next().then(
    (step) => step.done,
    (error: Error) => error.message,
  );
  expect(last).toBe(_how === 'throws' ? 'the source broke' : true);
  expect(await outcome(await start())).toBe('live');
  expect(await outcome(await start())).toBe('RATE_LIMITED CONCURRENCY');
});

test('an async generator waiting for its next event: return() frees its slot at once', async () => {
  const { store } = await freshStore('redis');
  async function* waiting() {
    yield { live: 1 };
    await new Promise(() => undefined); // its return() is handled only once this settles: never
  }
  const resolvers = { Subscription: { live: { subscribe: () => waiting() } } };
  const schema = limitedSchema(SDL, resolvers, { store, identify: () => 'team' });
  const start = () =>
    subscribe({ schema, document: parse('subscription { live }'), contextValue: {} });
  const live = (await Promise.all(
    Array.from({ length: LIMIT }, start),
  )) as AsyncGenerator<ExecutionResult>[];
  expect(await Promise.all(live.map(outcome))).toEqual(Array(LIMIT).fill('live'));
  // the client waits for the next event, as a server's `for await` does, then leaves
  void live[0]!.next();
  expect(await live[0]!.return(undefined)).toEqual({ done: true, value: undefined });
  expect(await outcome(await start())).toBe('live');
  expect(await outcome(await start())).toBe('RATE_LIMITED CONCURRENCY');
});

describe('a subscription whose host drops its stream', () => {
  // a lease of 1 s: renewed every 1/3 s, a stream nobody pulls is released within 2/3 s
  const SHORT = SDL.replace('window: 30', 'window: 1').replace(`limit: ${LIMIT}`, 'limit: 1');
  const rule: RateLimitRule = {
    action: 'live',
    algorithm: 'CONCURRENCY',
    windowSeconds: 1,
    limit: 1,
    cost: 1,
  };

  test('never pulled (Yoga answering 406): its slot frees within its lease, its source ends, its renewals stop', async () => {
    let calls!: ReturnType<typeof leaseCalls>;
    const { sources, start, store } = await app(SHORT, (s) => (calls = leaseCalls(s)).store);
    const free = async () => (await store.peek!('team', [rule]))[0]?.remaining;
    // started, as a host does before it answers: a stream, never pulled
    const dropped = (await start()) as AsyncGenerator<ExecutionResult>;
    expect(isAsyncIterable(dropped)).toBe(true);
    expect(await outcome(await start())).toBe('RATE_LIMITED CONCURRENCY');
    await waitFor('the slot to be free', async () => (await free()) === 1, 5_000);
    expect(sources[0]!.returned()).toBe(1);
    // nothing is asked of the store for it any more: no renewal, no release
    const asked = [calls.renewals.length, calls.releases()];
    await sleep(1_000);
    expect([calls.renewals.length, calls.releases()]).toEqual(asked);
    // a pull that comes after all finds it over: it never runs without its slot
    expect(await dropped.next()).toEqual({ done: true, value: undefined });
    const next = await start();
    expect(await outcome(next)).toBe('live');
    await (next as AsyncGenerator).return(undefined);
  });

  test('one whose client waits for its next event keeps its slot over several leases', async () => {
    const { start, store } = await app(SHORT);
    const free = async () => (await store.peek!('team', [rule]))[0]?.remaining;
    const live = (await start()) as AsyncGenerator<ExecutionResult>;
    expect(await outcome(live)).toBe('live');
    // as a server's `for await` waits for the next event: a `next()` pending
    const waiting = live.next();
    await sleep(2_500);
    expect(await free()).toBe(0);
    expect(await outcome(await start())).toBe('RATE_LIMITED CONCURRENCY');
    await live.return(undefined);
    expect(await free()).toBe(1);
    expect(await waiting).toEqual({ done: true, value: undefined });
  });
});
