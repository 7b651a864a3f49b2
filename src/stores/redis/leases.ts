import { isConcurrency, type RateLimitRule } from '../../rate-limit-rule';
import { counterKey, hashTag } from '../../keys';
import { randomUUID } from '../../runtime';
import type { StoreConnection } from './clients/adapter';
import { evalScript, script, type Functions } from './eval-script';
import { identityAt, type Lease } from '../store';

/*
 * The TypeScript side of `lua/lease.lua` (and of its function in `lua/library.lua`): releasing and renewing the slots a call holds on its
 * CONCURRENCY limits. In: the limits' counters of one hash tag as KEYS; the call's kind
 * (`release` or `renew`), the lease token, then
 * per key `leaseMs, slots`. Out: per key the slots released or renewed. A lease whose limits count
 * against one identity (the usual case) is one call; one of several hash tags, one per tag, which
 * a Cluster may serve from several masters.
 */

/** The script, with its SHA-1 and its function in the library. */
export const LEASE_SCRIPT = script('lease');

/** What a call does to its lease: the call's kind, as the script takes it. */
export type LeaseKind = 'release' | 'renew';

/** A token no other hit has: it names the slots of one hit (lua/lib/concurrency.lua). */
export const newLeaseToken = (): string => randomUUID();

/** The token for a hit (not a peek) on `rules`: one when it takes a slot, else undefined. */
export function leaseTokenFor(rules: readonly RateLimitRule[]): string | undefined {
  return rules.some(isConcurrency) ? newLeaseToken() : undefined;
}

/** The arguments (numkeys, KEYS, ARGV) of one script call per hash tag of `lease`. */
export function leaseArgs(prefix: string, lease: Lease, kind: LeaseKind): (string | number)[][] {
  const byTag = new Map<string, { keys: string[]; argv: (string | number)[] }>();
  lease.rules.forEach((rule, i) => {
    if (!isConcurrency(rule)) return;
    const identity = identityAt(lease.identity, i);
    const tag = hashTag(identity, rule);
    let call = byTag.get(tag);
    if (!call) byTag.set(tag, (call = { keys: [], argv: [kind, lease.token] }));
    call.keys.push(counterKey(prefix, identity, rule));
    call.argv.push(rule.windowSeconds * 1000, lease.costs?.[i] ?? rule.cost);
  });
  return [...byTag.values()].map(({ keys, argv }) => [keys.length, ...keys, ...argv]);
}

/**
 * `release` and `renew` of a Redis store, as `reset` is sent: refused at once while the
 * connection has not been ready for `connectWaitMs` (`unready` says why), else sent once it is
 * ready. A release that fails is left to the lease time; a renewal that fails is tried again at
 * the next interval.
 */
export function redisLeases(
  connection: StoreConnection,
  prefix: string,
  unready: () => string | undefined,
  whenReady: () => Promise<void>,
  functions: Functions,
): { release(lease: Lease): Promise<void>; renew(lease: Lease): Promise<boolean> } {
  const run = async (lease: Lease, kind: LeaseKind): Promise<number[]> => {
    const refusal = unready();
    if (refusal !== undefined) throw new Error(refusal);
    await whenReady();
    const replies = await Promise.all(
      leaseArgs(prefix, lease, kind).map((args) =>
        evalScript(connection, LEASE_SCRIPT, args, undefined, functions),
      ),
    );
    return replies.flatMap((reply) => (Array.isArray(reply) ? reply.map(Number) : [NaN]));
  };
  return {
    release: async (lease) => {
      await run(lease, 'release');
    },
    renew: async (lease) => {
      const renewed = await run(lease, 'renew');
      const slots = lease.rules.map((rule, i) =>
        isConcurrency(rule) ? (lease.costs?.[i] ?? rule.cost) : 0,
      );
      return renewed.reduce((sum, n) => sum + n, 0) === slots.reduce((sum, n) => sum + n, 0);
    },
  };
}
