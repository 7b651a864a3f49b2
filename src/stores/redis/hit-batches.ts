import { performance } from 'node:perf_hooks';

import type { Cluster, Redis } from 'ioredis';

import { asError } from '../../errors';
import { counterKey, hashTag } from '../../keys';
import { keySlot } from './cluster-slots';
import { openLazily, type Connection } from './connection';
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
 * it (ioredis follows a MOVED or ASK for that key, which Redis answers before running anything),
 * and the script reaches the others undeclared (see lua/hit.lua). When the map is stale (a slot
 * moved), the script answers the hits whose keys the node does not serve as not counted, having
 * written nothing for them; each is sent again on its own, its keys declared, so that Redis and
 * ioredis redirect it (and ioredis refreshes its map). A hit whose outcome is unknown (no reply)
 * is never sent again.
 *
 * A batch for a connection that is not ready (the store's, or a Cluster master's being opened)
 * waits for it in this queue, each hit at most `connectWaitMs` from when it was made: ioredis is
 * never asked to queue a hit (see connection.ts).
 */

/** A call of the hit script with these arguments: numkeys, KEYS, then ARGV. */
export type ScriptRun = (...args: (string | number)[]) => Promise<unknown>;

/** How {@link createHitQueue} sends its batches. */
export interface HitQueueOptions {
  /** Runs the hit script on the store's own connection. */
  readonly run: ScriptRun;
  /** The store's own connection, which hits wait for when it is not ready. */
  readonly connection: Connection;
  readonly prefix: string;
  /** Most hits per script call. */
  readonly maxBatch: number;
  /** How long a hit may wait for a connection (see connection.ts). */
  readonly connectWaitMs: number;
  /** Why hits must fail at once, if they must (see `connectionGate`). */
  readonly unready: () => string | undefined;
  /** The Cluster the store runs on, whose slot map groups hits; undefined on one Redis. */
  readonly cluster: Cluster | undefined;
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

/** How a batch's call is made: as one Redis takes it, routed by one key, or one hit resent. */
type Mode = 'whole' | 'routed' | 'resent';

/** A queue that decides each hit given to it in the next batch it fits in. */
export function createHitQueue(
  options: HitQueueOptions,
): (hit: PackedHit) => Promise<ScriptDecision> {
  const { run, connection, prefix, maxBatch, connectWaitMs, unready, cluster, acrossTags } =
    options;
  let queue: Pending[] = [];

  const send = (batch: readonly Pending[], mode: Mode): void => {
    let sent: Promise<unknown>;
    try {
      sent = run(...hitArgs(prefix, batch, mode === 'routed'));
    } catch (error) {
      sent = Promise.reject(asError(error));
    }
    sent.then(
      (reply) => {
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

  const batches = (group: readonly Pending[], mode: Mode): void => {
    for (let i = 0; i < group.length; i += maxBatch) send(group.slice(i, i + maxBatch), mode);
  };

  /** Hits waiting for a connection to be ready, by connection. */
  const waiting = new Map<Connection, Pending[]>();
  const heard = new WeakSet<Connection>();
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
  const hold = (on: Connection, group: readonly Pending[]): void => {
    openLazily(on);
    const list = waiting.get(on);
    if (list) list.push(...group);
    else waiting.set(on, [...group]);
    if (!heard.has(on)) {
      heard.add(on);
      on.on('ready', () => release(on));
    }
    const oldest = Math.min(...group.map((p) => p.queuedAt));
    setTimeout(() => expire(on), connectWaitMs - (performance.now() - oldest) + 1);
  };
  // the connection is ready: its hits go on to the next batches
  const release = (on: Connection): void => {
    const list = waiting.get(on);
    if (!list) return;
    waiting.delete(on);
    const now = performance.now();
    for (const p of list) {
      if (waitedTooLong(p, now)) continue;
      if (queue.length === 0) later(flush);
      queue.push(p);
    }
  };
  const expire = (on: Connection): void => {
    const list = waiting.get(on);
    if (!list) return;
    const now = performance.now();
    const left = list.filter((p) => !waitedTooLong(p, now));
    if (left.length > 0) waiting.set(on, left);
    else waiting.delete(on);
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
    if (connection.status !== 'ready') {
      hold(connection, pending);
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
    const masters = new Map<string, Redis>();
    for (const node of cluster.nodes('master')) {
      masters.set(`${node.options.host}:${node.options.port}`, node);
    }
    for (const [master, group] of byMaster) {
      const node = masters.get(master);
      if (node && node.status !== 'ready') hold(node, group);
      else batches(group, 'routed');
    }
  };

  /** The master serving every key of `p` (built here, once), or undefined if they span several. */
  const masterOf = (p: Pending): string | undefined => {
    const keys = p.rules.map((rule, i) => counterKey(prefix, identityAt(p.identity, i), rule));
    p.keys = keys;
    const slots = (cluster as Cluster).slots;
    const first = keySlot(keys[0] as string);
    // a slot the map does not hold yet is a group of its own: its keys route the call
    const master = slots[first]?.[0] ?? `slot ${first}`;
    for (let i = 1; i < keys.length; i++) {
      const slot = keySlot(keys[i] as string);
      if (slot !== first && (slots[slot]?.[0] ?? `slot ${slot}`) !== master) {
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
  const later = cluster
    ? (f: () => void) => void setImmediate(f)
    : (f: () => void) => process.nextTick(f);
  return (hit) =>
    new Promise<ScriptDecision>((resolve, reject) => {
      if (queue.length === 0) later(flush);
      // a literal, not a spread: this runs once per hit, and spreading costs several times more
      queue.push({
        identity: hit.identity,
        rules: hit.rules,
        costs: hit.costs,
        peek: hit.peek,
        receipts: hit.receipts,
        keys: hit.keys,
        giveBack: hit.giveBack,
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
