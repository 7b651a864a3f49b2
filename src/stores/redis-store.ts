import type { Cluster, Redis } from 'ioredis';

import { checkPrefix, counterKey } from '../keys';
import { luaScript } from '../lua';
import type { RateLimitAlgorithm, RateLimitRule } from '../rules';
import type { Decision, LimitState, RateLimitStore } from './store';

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
}

const DEFAULTS = { prefix: 'rl:', maxBatch: 128 } as const;

/** The name the hit script is registered under on the client by `defineCommand`. */
const COMMAND = 'graphqlAtomicRateLimitHit';

const ALGORITHM_ID: Record<RateLimitAlgorithm, number> = {
  FIXED_WINDOW: 1,
  SLIDING_WINDOW: 2,
  TOKEN_BUCKET: 3,
};

/** Connection states in which a standalone client would queue a hit instead of sending it. */
const AWAY = new Set(['reconnecting', 'close', 'end']);

type HitCommand = Record<typeof COMMAND, (...args: (string | number)[]) => Promise<unknown>>;

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
 * A hit whose outcome is unknown must never be sent twice, so the store turns off the two
 * ioredis behaviours that resend a command after its connection dropped:
 * `autoResendUnfulfilledCommands` (single node, and the nodes of a Cluster) and the Cluster's
 * `retryDelayOnFailover`. Such a hit fails instead, and the directive's `onStoreError` policy
 * answers it. While a single-node client is reconnecting, hits fail at once rather than wait in
 * the offline queue, where they would be counted after their request had been answered.
 */
export function createRedisStore(options: RedisStoreOptions): RateLimitStore {
  const { client } = options ?? {};
  if (!client || typeof client.defineCommand !== 'function') {
    throw new TypeError('createRedisStore: `client` must be an ioredis Redis or Cluster');
  }
  const prefix = checkPrefix(options.prefix ?? DEFAULTS.prefix);
  const maxBatch = options.maxBatch ?? DEFAULTS.maxBatch;
  if (!Number.isSafeInteger(maxBatch) || maxBatch < 1) {
    throw new RangeError(
      `createRedisStore: maxBatch must be a whole number >= 1, got ${String(maxBatch)}`,
    );
  }
  neverResend(client);
  client.defineCommand(COMMAND, { lua: luaScript('hit') });
  const run = (client as unknown as HitCommand)[COMMAND].bind(client);
  const standalone = !client.isCluster;

  let queue: Pending[] = [];

  const send = (batch: readonly Pending[]): void => {
    const keys: string[] = [];
    const argv: (string | number)[] = [];
    for (const { identity, rules } of batch) {
      argv.push(rules.length);
      for (const rule of rules) {
        keys.push(counterKey(prefix, identity, rule));
        argv.push(ALGORITHM_ID[rule.algorithm], rule.limit, rule.windowSeconds * 1000, rule.cost);
      }
    }
    let sent: Promise<unknown>;
    try {
      sent = run(keys.length, ...keys, ...argv);
    } catch (error) {
      sent = Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
    sent.then(
      (reply) => {
        let decisions: Decision[];
        try {
          decisions = parseReply(reply, batch);
        } catch (error) {
          for (const p of batch) p.reject(error);
          return;
        }
        batch.forEach((p, i) => p.resolve(decisions[i] as Decision));
      },
      (error: unknown) => {
        for (const p of batch) p.reject(error);
      },
    );
  };

  const flush = (): void => {
    const pending = queue;
    queue = [];
    if (standalone && AWAY.has(client.status)) {
      const error = new Error(`Redis is not connected (status: ${client.status})`);
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

function neverResend(client: Redis | Cluster): void {
  if (client.isCluster) {
    const cluster = client as Cluster;
    cluster.options.retryDelayOnFailover = 0;
    const off = (node: Redis): void => {
      node.options.autoResendUnfulfilledCommands = false;
    };
    cluster.nodes().forEach(off);
    cluster.on('+node', off);
  } else {
    (client as Redis).options.autoResendUnfulfilledCommands = false;
  }
}

function parseReply(reply: unknown, batch: readonly Pending[]): Decision[] {
  const expected = batch.reduce((n, p) => n + 1 + 3 * p.rules.length, 0);
  if (!Array.isArray(reply) || reply.length !== expected) {
    throw new Error(`Unexpected reply from the rate limit script: ${JSON.stringify(reply)}`);
  }
  const decisions: Decision[] = [];
  let at = 0;
  for (const { rules } of batch) {
    const allowed = reply[at++] === 1;
    const limits: LimitState[] = [];
    for (let i = 0; i < rules.length; i++) {
      limits.push({
        remaining: Number(reply[at++]),
        resetMs: Number(reply[at++]),
        retryAfterMs: Number(reply[at++]),
      });
    }
    decisions.push({ allowed, limits });
  }
  return decisions;
}
