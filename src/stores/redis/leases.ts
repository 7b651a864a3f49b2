import { randomUUID } from 'node:crypto';

import { isConcurrency, type RateLimitRule } from '../../rate-limit-rule';
import { counterKey, hashTag } from '../../keys';
import { luaScript } from '../../lua';
import type { StoreConnection } from './clients/adapter';
import { evalScript, script } from './eval-script';
import { identityAt, type Lease } from '../store';

/*
 * The TypeScript side of `lua/lease.lua`: releasing and renewing the slots a call holds on its
 * CONCURRENCY limits. In: the limits' counters of one hash tag as KEYS; op, the lease token, then
 * per key `leaseMs, slots`. Out: per key the slots released or renewed. A lease whose limits count
 * against one identity (the usual case) is one call; one of several hash tags, one per tag, which
 * a Cluster may serve from several masters.
 */

/** The script, with its SHA-1. */
export const LEASE_SCRIPT = script(luaScript('lease'));

/** What a call does to its lease. */
export type LeaseOp = 'release' | 'renew';

/** A token no other hit has: it names the slots of one hit (lua/lib/concurrency.lua). */
export const newLeaseToken = (): string => randomUUID();

/** The token for a hit on `rules`: one when it may take a slot (not a peek), else undefined. */
export function leaseTokenFor(rules: readonly RateLimitRule[], peek: boolean): string | undefined {
  return !peek && rules.some(isConcurrency) ? newLeaseToken() : undefined;
}

/** The arguments (numkeys, KEYS, ARGV) of one script call per hash tag of `lease`. */
export function leaseArgs(prefix: string, lease: Lease, op: LeaseOp): (string | number)[][] {
  const byTag = new Map<string, { keys: string[]; argv: (string | number)[] }>();
  lease.rules.forEach((rule, i) => {
    if (!isConcurrency(rule)) return;
    const identity = identityAt(lease.identity, i);
    const tag = hashTag(identity, rule);
    let call = byTag.get(tag);
    if (!call) byTag.set(tag, (call = { keys: [], argv: [op, lease.token] }));
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
): { release(lease: Lease): Promise<void>; renew(lease: Lease): Promise<boolean> } {
  const run = async (lease: Lease, op: LeaseOp): Promise<number[]> => {
    const refusal = unready();
    if (refusal !== undefined) throw new Error(refusal);
    await whenReady();
    const replies = await Promise.all(
      leaseArgs(prefix, lease, op).map((args) => evalScript(connection, LEASE_SCRIPT, args)),
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
