import type { Decider } from './decider';
import { isConcurrency } from '../rate-limit-rule';
import { unref } from '../runtime';
import type { Lease, RateLimitStore } from '../stores/store';

/*
 * How a field holds the slots of its CONCURRENCY limits while it runs. The hit that passed took
 * them under a lease of the limit's window; the call renews the lease a few times per lease time
 * while it runs, and releases it, once, when it ends: the resolver returns or throws, or its
 * promise settles (also when the field's parent was nulled by a sibling's error: graphql-js lets
 * the resolver finish, and the slot frees when it does). A client that leaves (the operation's
 * abort signal) does not end the call: graphql-js cannot stop a resolver that has started, so
 * its slot is held until the resolver settles. A resolver that never settles keeps its slot only
 * while this process renews it, so a process that dies (SIGKILL) frees its slots within one lease
 * time. A release or a renewal is one store call bounded by the directive's `timeoutMs`; one that
 * fails is left to the lease time. A renewal that learns the lease is gone (reset, or expired)
 * stops the renewals: nothing brings those slots back.
 */

/** Renewals per lease time: a lease survives two renewals lost in a row. */
export const RENEWALS_PER_LEASE = 3;

/**
 * The operation's abort signal, where the host puts one in the context: `context.signal`, else
 * `context.request.signal` (GraphQL Yoga and other fetch-API servers, whose request's signal aborts
 * when the client disconnects).
 */
export function abortSignalOf(context: unknown): AbortSignal | undefined {
  if (typeof context !== 'object' || context === null) return undefined;
  const { signal, request } = context as { signal?: unknown; request?: { signal?: unknown } };
  if (signal instanceof AbortSignal) return signal;
  const fromRequest = typeof request === 'object' && request !== null ? request.signal : undefined;
  return fromRequest instanceof AbortSignal ? fromRequest : undefined;
}

/**
 * Runs `run` (the resolver) holding `lease`, taken from `store`: renews it while the call runs,
 * and releases it when the call ends, however it ends. Answers what `run` answers (a value, or
 * the error it threw, as a rejection) once the release has been answered, or has failed or timed
 * out: a client that has its answer finds its slot free. An abort of `signal` while the call
 * runs frees nothing (the resolver still runs); a call whose operation was aborted before it
 * started does not run: its slots are released and it rejects with the signal's reason.
 */
export function holdLease<T>(
  run: () => T,
  lease: Lease,
  store: RateLimitStore,
  decider: Decider,
  signal: AbortSignal | undefined,
): T | Promise<Awaited<T>> {
  const end = heldLease(lease, store, decider);
  if (signal?.aborted) {
    const reason: unknown = signal.reason;
    return end().then(() => {
      throw reason instanceof Error
        ? reason
        : new Error('The operation was aborted before the field ran');
    });
  }
  // the call's answer waits for its release: once a client has it, its slot is free
  let result: T;
  try {
    result = run();
  } catch (error) {
    return end().then(() => {
      throw error;
    });
  }
  if (!isThenable(result)) return end().then(() => result as Awaited<T>);
  return Promise.resolve(result).then(
    (value) => end().then(() => value),
    (error: unknown) =>
      end().then(() => {
        throw error;
      }),
  );
}

/**
 * Holds `lease`, taken from `store`: renews it a few times per lease time until the function it
 * answers is called, which releases it, once (later calls answer the same promise), and settles
 * when the release has been answered, has failed or has timed out. The one home of renewal and
 * release, for a resolver's call ({@link holdLease}) and a live subscription
 * (src/decide/subscription-start.ts). Renewals stop once one answers that the lease is gone (a `reset`
 * freed it, or it expired), and, when `inUse` is given, the lease is released instead of renewed
 * at the first renewal that finds `inUse()` false (what it guards was dropped by its host).
 */
export function heldLease(
  lease: Lease,
  store: RateLimitStore,
  decider: Decider,
  inUse?: () => boolean,
): () => Promise<unknown> {
  const call = (op: 'release' | 'renew'): Promise<unknown> => {
    if (store[op] === undefined) return Promise.resolve();
    try {
      return decider.bounded<unknown>(store[op](lease)).catch(() => undefined);
    } catch {
      // a store that throws instead of rejecting: the lease time frees the slots
      return Promise.resolve();
    }
  };
  const leaseMs = Math.min(
    ...lease.rules.filter(isConcurrency).map((rule) => rule.windowSeconds * 1000),
  );
  const renew = (): void => {
    if (inUse && !inUse()) {
      void release();
      return;
    }
    void call('renew').then((held) => {
      // the slots were freed (reset) or expired: a renewal brings none back, so stop asking
      if (held === false) clearInterval(renewing);
    });
  };
  const renewing = setInterval(renew, leaseMs / RENEWALS_PER_LEASE);
  unref(renewing);
  let released: Promise<unknown> | undefined;
  const release = (): Promise<unknown> => {
    if (released) return released;
    clearInterval(renewing);
    return (released = call('release'));
  };
  return release;
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}
