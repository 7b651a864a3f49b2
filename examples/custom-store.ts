import { createMemoryStore, type RateLimitStore } from 'graphql-atomic-rate-limit';

/**
 * A custom store that times every call of another store and passes it on: what a store that
 * adds behaviour around the library's stores looks like. Every method of the contract that
 * `inner` has is kept: drop `release` and `renew` and a CONCURRENCY slot stays held until its
 * lease expires, drop `take` or `refundAndPeek` and a budget costs more round trips, drop
 * `ready` or `settingUp` and the first hits wait for set-up inside their deadline; drop
 * `admitOperation` or `settleOperation` and `budget.inFlight`/`budget.time` are refused. `close` closes only what
 * this store opened: nothing here, so it asks `inner`, which it owns.
 */
export function timedStore(
  inner: RateLimitStore,
  onCall: (method: string, ms: number) => void,
): RateLimitStore {
  const timed =
    <A extends unknown[], R>(method: string, call: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      const started = performance.now();
      try {
        return await call(...args);
      } finally {
        onCall(method, performance.now() - started);
      }
    };
  const store: RateLimitStore = { hit: timed('hit', inner.hit.bind(inner)) };
  if (inner.peek) store.peek = timed('peek', inner.peek.bind(inner));
  if (inner.reset) store.reset = timed('reset', inner.reset.bind(inner));
  if (inner.take) store.take = timed('take', inner.take.bind(inner));
  if (inner.refund) store.refund = timed('refund', inner.refund.bind(inner));
  if (inner.refundAndPeek)
    store.refundAndPeek = timed('refundAndPeek', inner.refundAndPeek.bind(inner));
  if (inner.release) store.release = timed('release', inner.release.bind(inner));
  if (inner.renew) store.renew = timed('renew', inner.renew.bind(inner));
  if (inner.ready) store.ready = inner.ready.bind(inner);
  if (inner.settingUp) store.settingUp = inner.settingUp.bind(inner);
  if (inner.admitOperation)
    store.admitOperation = timed('admitOperation', inner.admitOperation.bind(inner));
  if (inner.settleOperation)
    store.settleOperation = timed('settleOperation', inner.settleOperation.bind(inner));
  if (inner.close) store.close = inner.close.bind(inner);
  return store;
}

/**
 * For `CUSTOM_STORE=examples/custom-store.ts`: the project's store tests run against this store.
 * Stores of one namespace share their counters (here, one memory store per namespace).
 */
const namespaces = new Map<string, RateLimitStore>();
export function createStore(namespace: string): RateLimitStore {
  let inner = namespaces.get(namespace);
  if (!inner) namespaces.set(namespace, (inner = createMemoryStore()));
  return timedStore(inner, () => undefined);
}
