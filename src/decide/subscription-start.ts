import type { GraphQLFieldResolver } from 'graphql';

import { heldLease } from './leases';
import type { Decider } from './decider';
import type { Lease, RateLimitStore } from '../stores/store';

/**
 * A Subscription field's `subscribe`, limited: `decided` is the field's own `subscribe` (or
 * graphql-js' default, which reads the root value) behind the field's decision, so each start
 * of the subscription is one hit for its identity, and a refused start throws before any source
 * stream is made (graphql-js answers it as the subscription's result). Events are not counted:
 * `resolve`, which runs per event, is left as it was. The slots of its CONCURRENCY limits are
 * held by the source stream `decided` makes, for as long as it is live ({@link holdLive}).
 */
export function limitedStart<TContext>(
  decided: GraphQLFieldResolver<unknown, TContext>,
): GraphQLFieldResolver<unknown, TContext> {
  return (source, args, context, info) => decided(source, args, context, info);
}

/**
 * Runs `start` (a Subscription field's `subscribe`) holding `lease`, taken from `store`, for as
 * long as the subscription is live: the lease is renewed (src/decide/leases.ts) until the source
 * stream ends, however it ends, and then released once: its iterator's `return()` (the client
 * completed, its socket closed, the server shut down), its `throw()`, its last event, or an
 * error from it. A start that throws, or that makes no source stream, releases at once. A stream
 * its host drops without a word (Yoga answers 406 to a subscription asked for as JSON; a client
 * left while the start was decided) is one nobody pulls: a renewal that finds no `next()` waiting
 * and none asked for since the renewal before ({@link IDLE_RENEWALS} in a row) releases instead,
 * within 2/3 of the lease time, and ends the stream (its source's `return()`; a later `next()`
 * is done), so that it never runs without its slot.
 */
export function holdLive(
  start: () => unknown,
  lease: Lease,
  store: RateLimitStore,
  decider: Decider,
): Promise<unknown> {
  const pulls = pullWatch();
  const release = heldLease(lease, store, decider, pulls.inUse);
  const failed = (error: unknown): Promise<never> =>
    release().then(() => {
      throw error;
    });
  let started: unknown;
  try {
    started = start();
  } catch (error) {
    return failed(error);
  }
  return Promise.resolve(started).then(
    (stream) =>
      isAsyncIterable(stream)
        ? releasedAtEnd(stream, release, pulls)
        : release().then(() => stream),
    failed,
  );
}

/** Renewals in a row that find a live stream not pulled before it is taken as dropped. */
export const IDLE_RENEWALS = 2;

/** Whether anyone still pulls a live stream, as its renewals ask. */
interface PullWatch {
  /** Called at each renewal: false once the stream was not pulled for {@link IDLE_RENEWALS}. */
  readonly inUse: () => boolean;
  /** A `next()` (or `return()`, `throw()`) was asked for; `settled` once it answered. */
  pulled(): { settled(): void };
  /** Once it has answered false: the stream was dropped, and what it held released. */
  readonly dropped: () => boolean;
  /** What ends the source when it is dropped (its iterator's `return()`). */
  onDrop: (() => void) | undefined;
}

function pullWatch(): PullWatch {
  let waiting = 0;
  let pulledSince = false;
  let idle = 0;
  let dropped = false;
  const watch: PullWatch = {
    inUse: () => {
      if (waiting > 0 || pulledSince) idle = 0;
      else idle++;
      pulledSince = false;
      if (idle < IDLE_RENEWALS) return true;
      dropped = true;
      watch.onDrop?.();
      return false;
    },
    pulled: () => {
      waiting++;
      pulledSince = true;
      let once = false;
      return {
        settled: () => {
          if (once) return;
          once = true;
          waiting--;
          pulledSince = true;
        },
      };
    },
    dropped: () => dropped,
    onDrop: undefined,
  };
  return watch;
}

/**
 * `stream`, whose iterator calls `release` (which answers the same promise each time) at its
 * end, and tells `pulls` when it is pulled; once `pulls` found it dropped, it is done.
 */
function releasedAtEnd<T>(
  stream: AsyncIterable<T>,
  release: () => Promise<unknown>,
  pulls: PullWatch,
): AsyncIterable<T> {
  return {
    [Symbol.asyncIterator]: () => {
      let events: AsyncIterator<T>;
      try {
        if (pulls.dropped()) throw new Error('The subscription was dropped: no one pulled it');
        events = stream[Symbol.asyncIterator]();
      } catch (error) {
        void release();
        throw error;
      }
      pulls.onDrop = () => void Promise.resolve(events.return?.()).catch(() => undefined);
      // a step that ends the stream (done, or an error) answers once the slot is free
      const step = (next: () => Promise<IteratorResult<T>>): Promise<IteratorResult<T>> => {
        const pull = pulls.pulled();
        return Promise.resolve()
          .then(next)
          .then<IteratorResult<T>>(
            (result) => (result.done ? release().then(() => result) : result),
            (error: unknown) =>
              release().then(() => {
                throw error;
              }),
          )
          .finally(() => pull.settled());
      };
      const over = (value?: unknown): Promise<IteratorResult<T>> =>
        release().then(() => ({ done: true, value }) as IteratorResult<T>);
      const iterator: AsyncIterableIterator<T> = {
        next: () => (pulls.dropped() ? over() : step(() => events.next())),
        // the slot is freed as the client leaves, not once the source has wound down (an
        // async generator awaiting inside handles `return()` only when that await settles): the
        // answer is the source's own, or done once the slot is free, whichever comes first
        return: (value?: unknown) => {
          const done = over(value);
          const own = step(() =>
            events.return
              ? events.return(value)
              : Promise.resolve({ done: true, value } as IteratorResult<T>),
          );
          return Promise.race([own, done]);
        },
        throw: (error?: unknown) =>
          step(() => {
            if (events.throw) return events.throw(error);
            throw error;
          }),
        [Symbol.asyncIterator]: () => iterator,
      };
      return iterator;
    },
  };
}

function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { [Symbol.asyncIterator]?: unknown })[Symbol.asyncIterator] === 'function'
  );
}
