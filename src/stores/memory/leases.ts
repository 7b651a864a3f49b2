import { isConcurrency } from '../../rate-limit-rule';
import { counterKey } from '../keys';
import type { Entry } from './entry';
import { identityAt, type Lease } from '../store';

/*
 * Releasing and renewing a lease on the memory store, as lua/hit.lua's release and lua/lease.lua
 * do on Redis: the slots
 * of a lease are the members `token:1` to `token:cost` of its CONCURRENCY counters.
 */

/** The member of the j-th slot of the lease `token`, as lua/lib/concurrency.lua names it. */
export const leaseMember = (token: string, j: number): string => `${token}:${j}`;

/**
 * Frees the slots of `lease` in `entries` (`release`), or makes each still live one last a lease
 * time from `nowUs` (`renew`); answers how many slots it found live (`renew`) or removed.
 */
export function leaseSlots(
  entries: Map<string, Entry>,
  lease: Lease,
  op: 'release' | 'renew',
  nowUs: number,
): { slots: number; done: number } {
  let slots = 0;
  let done = 0;
  lease.rules.forEach((rule, i) => {
    if (!isConcurrency(rule)) return;
    const cost = lease.costs?.[i] ?? rule.cost;
    slots += cost;
    const key = counterKey('', identityAt(lease.identity, i), rule);
    const entry = entries.get(key);
    const leases = entry?.leases;
    if (entry === undefined || leases === undefined) return;
    const untilUs = nowUs + rule.windowSeconds * 1e6;
    for (let j = 1; j <= cost; j++) {
      const member = leaseMember(lease.token, j);
      const expiresAtUs = leases.get(member);
      if (expiresAtUs === undefined) continue;
      if (op === 'release') {
        leases.delete(member);
        done++;
      } else if (expiresAtUs > nowUs) {
        // an expired slot stays free: another hit may have counted it free since
        leases.set(member, untilUs);
        entry.expiresAtUs = Math.max(entry.expiresAtUs, untilUs);
        done++;
      }
    }
    if (leases.size === 0) entries.delete(key);
  });
  return { slots, done };
}
