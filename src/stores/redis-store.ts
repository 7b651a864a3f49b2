import type { Cluster, Redis } from 'ioredis';

import type { RateLimitRule } from '../algorithms';
import { RateLimitConfigError } from '../errors';
import { checkPrefix, counterKey, hashTag } from '../keys';
import { withBlockCache } from './block-cache';
import { connectionGate, guardConnections, handHits } from './connection-guard';
import { HIT_COMMAND, HIT_LUA, packHits, parseHitReply } from './hit-script';
import { hitError, identityAt, type Decision, type LimitState, type RateLimitStore } from './store';

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
   * Once Redis blocks a limit for an identity, answer further hits on it (of the same cost, or
   * more in a fixed window) as blocked in this process, without a Redis call, until the wait
   * Redis gave has passed: a flood of blocked hits costs Redis about one call per block. It
   * never blocks a hit Redis would allow, except after a `reset` made by another process (until
   * that block's wait runs out); a `reset` through this store clears it. At most 10,000
   * counters are remembered.
   * @default true
   */
  readonly blockCache?: boolean | undefined;
  /**
   * How long a hit may wait for a connection being opened (a client connecting, or a Cluster
   * node's connection, which ioredis opens on its first command) before it fails, unsent. Keep
   * it below the directive's `timeoutMs`: a hit still waiting when its caller was answered must
   * never be sent. Once a client has not been ready for this long, hits fail at once.
   * @default 200
   */
  readonly connectWaitMs?: number | undefined;
}

const DEFAULTS = { prefix: 'rl:', maxBatch: 128, blockCache: true, connectWaitMs: 200 } as const;

type HitCommand = Record<string, (...args: (string | number)[]) => Promise<unknown>>;

interface Pending {
  readonly identity: string | readonly string[];
  readonly rules: readonly RateLimitRule[];
  readonly costs: readonly number[] | undefined;
  readonly peek?: boolean | undefined;
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
  const blockCache = options.blockCache ?? DEFAULTS.blockCache;
  if (typeof blockCache !== 'boolean') {
    throw new RateLimitConfigError(
      `createRedisStore: blockCache must be a boolean, got ${JSON.stringify(blockCache)}`,
    );
  }
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
    // on a cluster a batch must stay in one slot: only the hits of one hash tag are sure to
    const groups = standalone ? [pending] : [...groupBy(pending, tagOf).values()];
    for (const group of groups) {
      for (let i = 0; i < group.length; i += maxBatch) send(group.slice(i, i + maxBatch));
    }
  };

  const enqueue = (
    identity: string | readonly string[],
    rules: readonly RateLimitRule[],
    costs: readonly number[] | undefined,
    peek: boolean,
  ): Promise<Decision> => {
    const misuse = hitError(identity, rules, costs);
    if (misuse) return Promise.reject(misuse);
    return new Promise<Decision>((resolve, reject) => {
      if (queue.length === 0) process.nextTick(flush);
      queue.push({ identity, rules, costs, peek, resolve, reject });
    });
  };

  const store: RateLimitStore = {
    hit: (identity, rules, costs) => enqueue(identity, rules, costs, false),

    async peek(identity, rules): Promise<LimitState[]> {
      const { limits } = await enqueue(identity, rules, undefined, true);
      return limits.map(({ remaining, resetMs }) => ({ remaining, resetMs, retryAfterMs: 0 }));
    },

    async reset(identity, rules): Promise<void> {
      const misuse = hitError(identity, rules);
      if (misuse) throw misuse;
      const refusal = unready();
      if (refusal !== undefined) throw new Error(refusal);
      // one identity and source: every key carries one hash tag, so one DEL, also on a cluster
      await client.del(...new Set(rules.map((rule) => counterKey(prefix, identity, rule))));
    },
  };
  return blockCache ? withBlockCache(store) : store;
}

/** The one hash tag of every key of `hit`, or '' when its keys span several. */
function tagOf({ identity, rules }: Pending): string {
  const first = hashTag(identityAt(identity, 0), rules[0] as RateLimitRule);
  for (let i = 1; i < rules.length; i++) {
    if (hashTag(identityAt(identity, i), rules[i] as RateLimitRule) !== first) return '';
  }
  return first;
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
