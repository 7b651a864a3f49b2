import { isConcurrency, type RateLimitRule } from '../../rate-limit-rule';
import { counterKey, hashTag } from '../keys';
import { randomUUID } from '../../runtime';
import type { StoreConnection } from './clients/adapter';
import { evalScript, script, type Functions } from './eval-script';
import type { PackedHit, ScriptDecision } from './hit-script';
import { identityAt, type Lease } from '../store';

/*
 * Releasing and renewing the slots a call holds on its CONCURRENCY limits. A release is a call of
 * the hit script's `release` kind (hit-script.ts), queued with the hits, so that the releases of
 * one turn share a script call as hits do. A renewal is `lua/lease.lua` (and its function in
 * `lua/library.lua`), of which this is the TypeScript side: the limits' counters of one hash tag
 * as KEYS; the call's kind (`renew`), the lease token, then per key `leaseMs, slots`. Out: per
 * key the slots renewed. A lease whose limits count against one identity (the usual case) is one
 * call; one of several hash tags, one per tag, which a Cluster may serve from several masters.
 */

/** The script, with its SHA-1 and its function in the library. */
export const LEASE_SCRIPT = script('lease');

/** What a call of lua/lease.lua does to its lease: the call's kind, as the script takes it. */
export type LeaseKind = 'renew';

/** A token no other hit has: it names the slots of one hit (lua/lib/concurrency.lua). */
export const newLeaseToken = (): string => randomUUID();

/** The token for a hit (not a peek) on `rules`: one when it takes a slot, else undefined. */
export function leaseTokenFor(rules: readonly RateLimitRule[]): string | undefined {
  return rules.some(isConcurrency) ? newLeaseToken() : undefined;
}

/** The slots `lease` holds on each CONCURRENCY limit of one hash tag, per tag. */
function byTag(lease: Lease): { identities: string[]; rules: RateLimitRule[]; slots: number[] }[] {
  const tags = new Map<string, { identities: string[]; rules: RateLimitRule[]; slots: number[] }>();
  lease.rules.forEach((rule, i) => {
    if (!isConcurrency(rule)) return;
    const identity = identityAt(lease.identity, i);
    const tag = hashTag(identity, rule);
    let part = tags.get(tag);
    if (!part) tags.set(tag, (part = { identities: [], rules: [], slots: [] }));
    part.identities.push(identity);
    part.rules.push(rule);
    part.slots.push(lease.costs?.[i] ?? rule.cost);
  });
  return [...tags.values()];
}

/** The arguments (numkeys, KEYS, ARGV) of one script call per hash tag of `lease`. */
export function leaseArgs(prefix: string, lease: Lease, kind: LeaseKind): (string | number)[][] {
  return byTag(lease).map(({ identities, rules, slots }) => {
    const keys = rules.map((rule, i) => counterKey(prefix, identities[i] as string, rule));
    const argv = rules.flatMap((rule, i) => [rule.windowSeconds * 1000, slots[i] as number]);
    return [keys.length, ...keys, kind, lease.token, ...argv];
  });
}

/** The release of `lease` as calls of the hit script: one per hash tag. */
export function releaseCalls(lease: Lease): PackedHit[] {
  return byTag(lease).map(({ identities, rules, slots }) => ({
    kind: 'release',
    identity: identities,
    rules,
    costs: slots,
    lease: lease.token,
  }));
}

/**
 * `release` and `renew` of a Redis store. A release joins the hits' queue (`queue`), which sends
 * it with the calls of its turn once the connection is ready. A renewal is sent as `reset` is:
 * refused at once while the connection has not been ready for `connectWaitMs` (`unready` says
 * why), else sent once it is ready. A release that fails is left to the lease time; a renewal
 * that fails is tried again at the next interval.
 */
export function redisLeases(
  connection: StoreConnection,
  prefix: string,
  unready: () => string | undefined,
  whenReady: () => Promise<void>,
  functions: Functions,
  queue: (call: PackedHit) => Promise<ScriptDecision>,
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
      await Promise.all(releaseCalls(lease).map(queue));
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
