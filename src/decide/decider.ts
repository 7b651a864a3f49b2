import type { DecidedBy } from '../decision-events';
import { asError, StoreTimeoutError } from '../errors';
import type { Config } from '../options/directive-options';
import type { Decision, RateLimitStore } from '../stores/store';
import { createDeadlines } from './deadlines';

/** A decision, who made it, the store that made it, and the store's failure when the fallback did. */
export interface Outcome<D extends Decision = Decision> {
  readonly decision: D;
  readonly decidedBy: DecidedBy;
  /** The store's failure or timeout, when the fallback store decided. */
  readonly error?: Error | undefined;
  /** The store that decided, which alone can refund what it took. */
  readonly store: RateLimitStore;
}

/** How one directive asks its stores, every call bounded by its one timer. */
export interface Decider {
  /**
   * Runs `call` on the store; when it fails or times out and a `fallbackStore` is set, on the
   * fallback. Rejects with the store's error when nothing decided.
   */
  decide<D extends Decision>(call: (on: RateLimitStore) => Promise<D>): Promise<Outcome<D>>;
  /** `promise`, or a StoreTimeoutError once `timeoutMs` have passed. */
  bounded<T>(promise: Promise<T>): Promise<T>;
}

/**
 * The decider of one directive: the fields' hits and the budget's takes share its stores and
 * its one timer (see `createDeadlines`), so it is made once per directive, not per field.
 */
export function createDecider(config: Config): Decider {
  const { store, fallbackStore, timeoutMs } = config;
  const bounded = createDeadlines(timeoutMs, () => new StoreTimeoutError(timeoutMs));
  // `call` on `on`, bounded; what it throws before answering is its rejection
  const start = <D extends Decision>(
    call: (on: RateLimitStore) => Promise<D>,
    on: RateLimitStore,
  ): Promise<D> => {
    try {
      const answer = call(on);
      const decided = bounded(answer);
      // beside the answer, not in its chain: a decision in time costs no extra turn
      void decided.catch((error: unknown) => {
        if (error instanceof StoreTimeoutError) void releaseLate(answer, on, bounded);
      });
      return decided;
    } catch (caught) {
      return Promise.reject(asError(caught));
    }
  };
  // a store that sets itself up is waited for (as long as it allows) before the call's own
  // deadline starts: set-up is never spent from `timeoutMs`
  const ask = <D extends Decision>(
    call: (on: RateLimitStore) => Promise<D>,
    on: RateLimitStore,
  ): Promise<D> => {
    let setting: Promise<void> | undefined;
    try {
      setting = on.settingUp?.();
    } catch {
      setting = undefined;
    }
    return setting ? setting.then(() => start(call, on)) : start(call, on);
  };
  return {
    bounded,
    // not an async function: a decision costs one `then` on the store's answer, and no more
    decide<D extends Decision>(call: (on: RateLimitStore) => Promise<D>): Promise<Outcome<D>> {
      return ask(call, store).then(
        (decision): Outcome<D> => ({
          decision,
          decidedBy: decision.cached ? 'cache' : 'store',
          store,
        }),
        (caught: unknown) => {
          const error = asError(caught);
          if (!fallbackStore) throw error;
          return ask(call, fallbackStore).then(
            (decision): Outcome<D> => ({
              decision,
              decidedBy: 'fallback',
              error,
              store: fallbackStore,
            }),
            () => {
              throw error;
            },
          );
        },
      );
    },
  };
}

/**
 * A hit whose answer came after its deadline was refused (or decided by the fallback), so no call
 * holds the slots it may have taken: when the late answer says it passed with a lease, the lease
 * is released at once. An answer that never comes leaves its slots to the lease time (the
 * limit's `window`), as nothing renews them.
 */
function releaseLate(
  answer: Promise<Decision>,
  on: RateLimitStore,
  bounded: <T>(promise: Promise<T>) => Promise<T>,
): Promise<unknown> {
  return answer
    .then((late) => {
      if (late.lease === undefined || on.release === undefined) return undefined;
      return bounded(on.release(late.lease));
    })
    .catch(() => undefined);
}
