import type { Lease, RateLimitStore } from '../../src';

/**
 * `store` (a real one), telling what its leases were asked: each renewal's answer (whether every
 * slot was still held) and how many releases were sent, so that a test sees when renewals stop.
 */
export function leaseCalls(store: RateLimitStore): {
  store: RateLimitStore;
  renewals: boolean[];
  releases: () => number;
} {
  const renewals: boolean[] = [];
  let releases = 0;
  const told: RateLimitStore = {
    hit: (identity, rules, costs) => store.hit(identity, rules, costs),
    peek: store.peek && ((identity, rules) => store.peek!(identity, rules)),
    reset: store.reset && ((identity, rules) => store.reset!(identity, rules)),
    release: async (lease: Lease) => {
      releases++;
      await store.release?.(lease);
    },
    renew: async (lease: Lease) => {
      const held = (await store.renew?.(lease)) ?? true;
      renewals.push(held);
      return held;
    },
  };
  return { store: told, renewals, releases: () => releases };
}
