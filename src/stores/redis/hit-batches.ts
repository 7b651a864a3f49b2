import { asError } from '../../errors';
import { counterKey, hashTag } from '../keys';
import { afterThisPass, nextTick } from '../../runtime';
import { keySlot } from './cluster-slots';
import type { Endpoint, StoreConnection } from './clients/adapter';
import {
  ElsewhereError,
  hitArgs,
  parseHitReply,
  type PackedHit,
  type ScriptDecision,
} from './hit-script';
import { identityAt } from '../store';

/*
 * Hits made in the same turn of the event loop (on a Cluster, the same pass) are queued and sent
 * together, as one call of the hit script per batch: the script decides them one after the other, exactly as if they had
 * arrived in that order, and the fixed cost of a call is paid once per batch instead of once per
 * hit.
 *
 * On a Cluster a batch holds the hits of one master, as the client's slot map places their keys:
 * one call per master touched, however many identities. Its call declares one key, which routes
 * it (the client follows a MOVED or ASK for that key, which Redis answers before running anything),
 * and the script reaches the others undeclared (see lua/hit.lua). When the map is stale (a slot
 * moved), the script answers the hits whose keys the node does not serve as not counted, having
 * written nothing for them; each is sent again on its own, its keys declared, so that Redis and
 * the client redirect it (and the client refreshes its map). A hit whose outcome is unknown (no
 * reply) is never sent again.
 *
 * A batch for a connection that is not ready (the store's, or a Cluster master's being opened)
 * waits for it in this queue, each hit at most `connectWaitMs` from when it was made: the client
 * is never asked to queue a hit (see connection.ts).
 */

/**
 * A call of the hit script with these arguments (numkeys, KEYS, then ARGV), sent again after a
 * NOSCRIPT reply only while `mayReload` allows.
 */
export type ScriptRun = (
  args: readonly (string | number)[],
  mayReload: () => boolean,
) => Promise<unknown>;

/** How {@link createHitQueue} sends its batches. */
export interface HitQueueOptions {
  /** Runs the hit script on the store's own connection. */
  readonly run: ScriptRun;
  /** The store's own connection, which hits wait for when it is not ready. */
  readonly connection: StoreConnection;
  readonly prefix: string;
  /** Most hits per script call. */
  readonly maxBatch: number;
  /** How long a hit may wait for a connection (see connection.ts). */
  readonly connectWaitMs: number;
  /** Why hits must fail at once, if they must (see `connectionGate`). */
  readonly unready: () => string | undefined;
  /** Decides a Cluster hit whose keys span several masters, which no one call can reach. */
  readonly acrossTags: (hit: PackedHit) => Promise<ScriptDecision>;
}

interface Pending extends PackedHit {
  keys?: readonly string[] | undefined;
  /** When it was queued (performance.now()): a hit is sent again only within connectWaitMs. */
  readonly queuedAt: number;
  resolve(decision: ScriptDecision): void;
  reject(error: unknown): void;
}

/** The fewest hits of one pass that may go as two calls (see `batches`). */
const SPLIT_AT = 16;

/** How a batch's call is made: as one Redis takes it, routed by one key, or one hit resent. */
type Mode = 'whole' | 'routed' | 'resent';

/** A queue that decides each hit given to it in the next batch it fits in. */
export function createHitQueue(
  options: HitQueueOptions,
): (hit: PackedHit) => Promise<ScriptDecision> {
  const { run, connection, prefix, maxBatch, connectWaitMs, unready, acrossTags } = options;
  const cluster = connection.isCluster;
  let queue: Pending[] = [];
  /** Script calls sent and not answered yet. */
  let out = 0;

  const send = (batch: readonly Pending[], mode: Mode): void => {
    let sent: Promise<unknown>;
    // NOSCRIPT: nothing ran; the batch goes again as EVAL while its first hit's caller may wait
    const oldest = batch[0]?.queuedAt ?? 0;
    const mayReload = (): boolean => performance.now() - oldest < connectWaitMs;
    try {
      sent = run(hitArgs(prefix, batch, mode === 'routed'), mayReload);
    } catch (error) {
      sent = Promise.reject(asError(error));
    }
    out++;
    sent.then(
      (reply) => {
        out--;
        let outcomes: (ScriptDecision | Error)[];
        try {
          outcomes = parseHitReply(reply, batch);
        } catch (error) {
          for (const p of batch) p.reject(error);
          return;
        }
        batch.forEach((p, i) => {
          const outcome = outcomes[i] as ScriptDecision | Error;
          if (outcome instanceof ElsewhereError && mode === 'routed') resend(p, outcome);
          else if (outcome instanceof Error) p.reject(outcome);
          else p.resolve(outcome);
        });
      },
      (error: unknown) => {
        out--;
        for (const p of batch) p.reject(error);
      },
    );
  };

  const decideAcross = (p: Pending): void => {
    acrossTags(p).then(
      (decision) => p.resolve(decision),
      (error: unknown) => p.reject(error),
    );
  };

  // nothing of `p` was counted: it goes where its keys live, unless its caller may be gone
  const resend = (p: Pending, why: ElsewhereError): void => {
    const waitMs = connectWaitMs - (performance.now() - p.queuedAt);
    if (waitMs <= 0) p.reject(why);
    else if (tagsOf(p) > 1) decideAcross(p);
    else send([p], 'resent');
  };

  // Redis decides one call while this process reads the answers of another. A pass's hits sent
  // as one call would have this process wait for all of them, then Redis wait for the next pass:
  // with fewer than two calls out, a pass of SPLIT_AT hits or more goes as two halves, whose
  // first answers come back while Redis still decides the second half, and the two halves go on
  // as passes of their own (1.6 to 2 times the decisions/s at 16 to 128 hits in flight)
  const batches = (group: readonly Pending[], mode: Mode): void => {
    const halves = mode === 'whole' && out < 2 && group.length >= SPLIT_AT;
    const size = Math.min(maxBatch, halves ? Math.ceil(group.length / 2) : group.length);
    for (let i = 0; i < group.length; i += size) send(group.slice(i, i + size), mode);
  };

  /** Hits waiting for a connection to be ready: the store's ('') or a master's (its address). */
  const waiting = new Map<string, Pending[]>();
  const listening = new Set<string>();
  const waitedTooLong = (p: Pending, now: number): boolean => {
    const waited = now - p.queuedAt;
    if (waited < connectWaitMs) return false;
    p.reject(
      new Error(
        `The hit waited ${Math.round(waited)} ms for a Redis connection, more than ` +
          `connectWaitMs (${connectWaitMs}); it is not sent`,
      ),
    );
    return true;
  };
  const hold = (on: Endpoint | StoreConnection, key: string, group: readonly Pending[]): void => {
    on.open();
    const list = waiting.get(key);
    if (list) list.push(...group);
    else waiting.set(key, [...group]);
    if (!listening.has(key)) {
      listening.add(key);
      on.onceReady(() => {
        listening.delete(key);
        release(key);
      });
    }
    expireLater(key, group);
  };
  // a timer may fire a little before the time it was set for: the hits it finds still in time
  // are looked at again when they are due, never left waiting for a connection for ever
  const expireLater = (key: string, group: readonly Pending[]): void => {
    const oldest = Math.min(...group.map((p) => p.queuedAt));
    setTimeout(() => expire(key), Math.max(1, connectWaitMs - (performance.now() - oldest) + 1));
  };
  // the connection is ready: its hits go on to the next batches
  const release = (key: string): void => {
    const list = waiting.get(key);
    if (!list) return;
    waiting.delete(key);
    const now = performance.now();
    for (const p of list) {
      if (waitedTooLong(p, now)) continue;
      if (queue.length === 0) later(flush);
      queue.push(p);
    }
  };
  const expire = (key: string): void => {
    const list = waiting.get(key);
    if (!list) return;
    const now = performance.now();
    const left = list.filter((p) => !waitedTooLong(p, now));
    if (left.length > 0) {
      waiting.set(key, left);
      expireLater(key, left);
    } else {
      waiting.delete(key);
    }
  };

  const flush = (): void => {
    const pending = queue;
    queue = [];
    const refusal = unready();
    if (refusal !== undefined) {
      const error = new Error(refusal);
      for (const p of pending) p.reject(error);
      return;
    }
    if (!connection.isReady()) {
      hold(connection, '', pending);
      return;
    }
    if (!cluster) {
      batches(pending, 'whole');
      return;
    }
    const byMaster = new Map<string, Pending[]>();
    for (const p of pending) {
      const master = masterOf(p);
      if (master === undefined) {
        decideAcross(p);
        continue;
      }
      const group = byMaster.get(master);
      if (group) group.push(p);
      else byMaster.set(master, [p]);
    }
    for (const [address, group] of byMaster) {
      const master = connection.master(address);
      if (master && !master.isReady()) hold(master, address, group);
      else batches(group, 'routed');
    }
  };

  /** The master serving every key of `p` (built here, once), or undefined if they span several. */
  const masterOf = (p: Pending): string | undefined => {
    const keys = p.rules.map((rule, i) => counterKey(prefix, identityAt(p.identity, i), rule));
    p.keys = keys;
    const first = keySlot(keys[0] as string);
    // a slot the map does not hold yet is a group of its own: its keys route the call
    const master = connection.masterOf(first) ?? `slot ${first}`;
    for (let i = 1; i < keys.length; i++) {
      const slot = keySlot(keys[i] as string);
      if (slot !== first && (connection.masterOf(slot) ?? `slot ${slot}`) !== master) {
        // keys of one hash tag share a slot, unless the tag is empty (Redis then hashes the
        // whole key): such a hit cannot be split by tag, and fails as it did before
        return tagsOf(p) > 1 ? undefined : master;
      }
    }
    return master;
  };

  // On a Cluster the replies of several masters arrive in one pass of the event loop, and the
  // hits they release go to every master: flushing once the pass has read them all (setImmediate)
  // rather than after each reply (nextTick) makes batches larger (twice, on three masters at 256
  // hits in flight; a tenth less CPU per decision for Redis and Node), for a wait of the rest of
  // that pass.
  const later = cluster ? afterThisPass : nextTick;
  return (hit) =>
    new Promise<ScriptDecision>((resolve, reject) => {
      if (queue.length === 0) later(flush);
      // a literal, not a spread: this runs once per hit, and spreading costs several times more
      queue.push({
        kind: hit.kind,
        identity: hit.identity,
        rules: hit.rules,
        costs: hit.costs,
        keys: hit.keys,
        refund: hit.refund,
        lease: hit.lease,
        queuedAt: performance.now(),
        resolve,
        reject,
      });
    });
}

/** How many hash tags the keys of `hit` have. */
function tagsOf({ identity, rules }: PackedHit): number {
  return new Set(rules.map((rule, i) => hashTag(identityAt(identity, i), rule))).size;
}
