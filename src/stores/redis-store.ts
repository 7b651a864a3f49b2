import type { Cluster, Redis } from 'ioredis';

import type { RateLimitRule } from '../algorithms';
import { RateLimitConfigError } from '../errors';
import { checkPrefix } from '../keys';
import { connectionGate, guardConnections, handHits } from './connection-guard';
import { HIT_COMMAND, HIT_LUA, packHits, parseHitReply } from './hit-script';
import { hitError, type Decision, type RateLimitStore } from './store';

/** Options of {@link createRedisStore}. */
export interface RedisStoreOptions {
  /** An ioredis client: a single node `Redis` or a `Cluster`. */
  readonly client: Redis | Cluster;
  /** Prepended to every key; must not contain `{` or `}`. @default 'rl:' */
  readonly prefix?: string | undefined;
  /**
   * Most hits decided by one script call. Hits made in the same turn of the event loop are
   * coalesced into one call (on a Cluster, per identity), which the script decides one after
   * the other, each atomically; 1 sends every hit on its own. @default 128
   */
  readonly maxBatch?: number | undefined;
  /**
   * How long a hit may wait for a connection being opened (a client connecting, or a Cluster
   * node's connection, which ioredis opens on its first command) before it fails, unsent. Keep
   * it below the directive's `timeoutMs`: a hit still waiting when its caller was answered must
   * never be sent. Once a client has not been ready for this long, hits fail at once.
   * @default 200
   */
  readonly connectWaitMs?: number | undefined;
}

const DEFAULTS = { prefix: 'rl:', maxBatch: 128, connectWaitMs: 200 } as const;

type HitCommand = Record<string, (...args: (string | number)[]) => Promise<unknown>>;

interface Pending {
  readonly identity: string;
  readonly rules: readonly RateLimitRule[];
  resolve(decision: Decision): void;
  reject(error: unknown): void;
}

/**
 * A store on Redis: hits are decided by EVALSHA of `lua/hit.lua` (ioredis' `defineCommand` sends
 * EVAL when, and only when, Redis answers NOSCRIPT), so each decision is atomic across any
 * number of processes sharing the Redis or the Cluster, on the Redis server's clock. Hits made
 * in the same turn of the event loop share one script call (see `maxBatch`): the script decides
 * them one after the other, exactly as if they had arrived in that order, and the fixed cost
 * of a call is paid once per batch instead of once per hit.
 *
 * A hit reaches Redis while its caller waits, or never (see connection-guard.ts): it is never
 * left in one of ioredis' queues, to be counted after its request was answered, and never resent
 * after its connection dropped: the store turns off `autoResendUnfulfilledCommands` (single
 * node, and the nodes of a Cluster) and the Cluster's `retryDelayOnFailover`. Such a hit fails
 * instead, and the directive's `onStoreError` policy answers it.
 */
export function createRedisStore(options: RedisStoreOptions): RateLimitStore {
  const { client } = options ?? {};
  if (!client || typeof client.defineCommand !== 'function') {
    throw new RateLimitConfigError(
      'createRedisStore: `client` must be an ioredis Redis or Cluster',
    );
  }
  const prefix = checkPrefix(options.prefix ?? DEFAULTS.prefix);
  const maxBatch = options.maxBatch ?? DEFAULTS.maxBatch;
  if (!Number.isSafeInteger(maxBatch) || maxBatch < 1) {
    throw new RateLimitConfigError(
      `createRedisStore: maxBatch must be a whole number >= 1, got ${String(maxBatch)}`,
    );
  }
  const connectWaitMs = options.connectWaitMs ?? DEFAULTS.connectWaitMs;
  if (!Number.isFinite(connectWaitMs) || connectWaitMs < 1) {
    throw new RateLimitConfigError(
      `createRedisStore: connectWaitMs must be a number of milliseconds >= 1, got ${String(connectWaitMs)}`,
    );
  }
  guardConnections(client, connectWaitMs);
  const unready = connectionGate(client, connectWaitMs);
  client.defineCommand(HIT_COMMAND, { lua: HIT_LUA });
  const run = (client as unknown as HitCommand)[HIT_COMMAND]!.bind(client);
  const standalone = !client.isCluster;

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
        let outcomes: (Decision | Error)[];
        try {
          outcomes = parseHitReply(reply, batch);
        } catch (error) {
          for (const p of batch) p.reject(error);
          return;
        }
        batch.forEach((p, i) => {
          const outcome = outcomes[i] as Decision | Error;
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
    // on a cluster a batch must stay in one slot: only one identity's hits are sure to
    const groups = standalone ? [pending] : [...groupBy(pending, (p) => p.identity).values()];
    for (const group of groups) {
      for (let i = 0; i < group.length; i += maxBatch) send(group.slice(i, i + maxBatch));
    }
  };

  return {
    hit(identity: string, rules: readonly RateLimitRule[]): Promise<Decision> {
      const misuse = hitError(identity, rules);
      if (misuse) return Promise.reject(misuse);
      return new Promise<Decision>((resolve, reject) => {
        if (queue.length === 0) process.nextTick(flush);
        queue.push({ identity, rules, resolve, reject });
      });
    },
  };
}

function groupBy<T>(items: readonly T[], keyOf: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    const group = groups.get(key);
    if (group) group.push(item);
    else groups.set(key, [item]);
  }
  return groups;
}
