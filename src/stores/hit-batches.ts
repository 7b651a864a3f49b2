import type { RateLimitRule } from '../algorithms';
import { hashTag } from '../keys';
import { handHits } from './connection-guard';
import { packHits, parseHitReply, type PackedHit, type ScriptDecision } from './hit-script';
import { identityAt } from './store';

/*
 * Hits made in the same turn of the event loop are queued and sent together, as one call of the
 * hit script per batch: the script decides them one after the other, exactly as if they had
 * arrived in that order, and the fixed cost of a call is paid once per batch instead of once per
 * hit.
 */

/** A call of the hit script with these arguments: numkeys, KEYS, then ARGV. */
export type ScriptRun = (...args: (string | number)[]) => Promise<unknown>;

/** How {@link createHitQueue} sends its batches. */
export interface HitQueueOptions {
  /** Runs the hit script on the store's client. */
  readonly run: ScriptRun;
  readonly prefix: string;
  /** Most hits per script call. */
  readonly maxBatch: number;
  /** How long a batch may wait for a connection (see connection-guard.ts). */
  readonly connectWaitMs: number;
  /** Why hits must fail at once, if they must (see `connectionGate`). */
  readonly unready: () => string | undefined;
  /** Whether the client is a Cluster, where a batch must stay in one slot. */
  readonly cluster: boolean;
  /** Decides a Cluster hit whose keys span several hash tags, which no batch can hold. */
  readonly acrossTags: (hit: PackedHit) => Promise<ScriptDecision>;
}

interface Pending extends PackedHit {
  resolve(decision: ScriptDecision): void;
  reject(error: unknown): void;
}

/** A queue that decides each hit given to it in the next batch it fits in. */
export function createHitQueue(
  options: HitQueueOptions,
): (hit: PackedHit) => Promise<ScriptDecision> {
  const { run, prefix, maxBatch, connectWaitMs, unready, cluster, acrossTags } = options;
  let queue: Pending[] = [];

  const send = (batch: readonly Pending[]): void => {
    const { keys, argv } = packHits(prefix, batch);
    let sent: Promise<unknown>;
    try {
      sent = handHits(connectWaitMs, () => run(keys.length, ...keys, ...argv));
    } catch (error) {
      sent = Promise.reject(error instanceof Error ? error : new Error(String(error)));
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
          if (outcome instanceof Error) p.reject(outcome);
          else p.resolve(outcome);
        });
      },
      (error: unknown) => {
        for (const p of batch) p.reject(error);
      },
    );
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
    // on a cluster a batch must stay in one slot: only the hits of one hash tag are sure to
    const groups = cluster ? groupBy(pending, tagOf) : new Map([['', pending]]);
    for (const [tag, group] of groups) {
      if (tag === SPANS_TAGS) {
        for (const p of group) {
          acrossTags(p).then(
            (decision) => p.resolve(decision),
            (error: unknown) => p.reject(error),
          );
        }
        continue;
      }
      for (let i = 0; i < group.length; i += maxBatch) send(group.slice(i, i + maxBatch));
    }
  };

  return (hit) =>
    new Promise<ScriptDecision>((resolve, reject) => {
      if (queue.length === 0) process.nextTick(flush);
      queue.push({ ...hit, resolve, reject });
    });
}

/** What {@link tagOf} answers for a hit whose keys span several hash tags: no tag has braces. */
const SPANS_TAGS = '{}';

/** The one hash tag of every key of `hit`, or {@link SPANS_TAGS}. */
function tagOf({ identity, rules }: PackedHit): string {
  const first = hashTag(identityAt(identity, 0), rules[0] as RateLimitRule);
  for (let i = 1; i < rules.length; i++) {
    if (hashTag(identityAt(identity, i), rules[i] as RateLimitRule) !== first) return SPANS_TAGS;
  }
  return first;
}

/** `items` grouped by `keyOf`, each group in the order of `items`. */
export function groupBy<T>(items: readonly T[], keyOf: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    const group = groups.get(key);
    if (group) group.push(item);
    else groups.set(key, [item]);
  }
  return groups;
}
