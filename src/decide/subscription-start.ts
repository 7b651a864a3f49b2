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
 * error from it. A start that throws, or that makes no source stream, releases at once.
 */
export function holdLive(
  start: () => unknown,
  lease: Lease,
  store: RateLimitStore,
  decider: Decider,
): Promise<unknown> {
  const release = heldLease(lease, store, decider);
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
      isAsyncIterable(stream) ? releasedAtEnd(stream, release) : release().then(() => stream),
    failed,
  );
}

/** `stream`, whose iterator calls `release` (which answers the same promise each time) at its end. */
function releasedAtEnd<T>(
  stream: AsyncIterable<T>,
  release: () => Promise<unknown>,
): AsyncIterable<T> {
  return {
    [Symbol.asyncIterator]: () => {
      let events: AsyncIterator<T>;
      try {
        events = stream[Symbol.asyncIterator]();
      } catch (error) {
        void release();
        throw error;
      }
      // a step that ends the stream (done, or an error) answers once the slot is free
      const step = (next: () => Promise<IteratorResult<T>>): Promise<IteratorResult<T>> =>
        Promise.resolve()
          .then(next)
          .then(
            (result) => (result.done ? release().then(() => result) : result),
            (error: unknown) =>
              release().then(() => {
                throw error;
              }),
          );
      const iterator: AsyncIterableIterator<T> = {
        next: () => step(() => events.next()),
        // the slot is freed as the client leaves, not once the source has wound down (an
        // async generator awaiting inside handles `return()` only when that await settles): the
        // answer is the source's own, or done once the slot is free, whichever comes first
        return: (value?: unknown) => {
          const done = release().then(() => ({ done: true, value }) as IteratorResult<T>);
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
