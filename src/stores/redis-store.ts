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
}

const DEFAULTS = { prefix: 'rl:' } as const;

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

/**
 * A store on Redis: every hit is one EVALSHA of `lua/hit.lua` (ioredis' `defineCommand` sends
 * EVAL when, and only when, Redis answers NOSCRIPT), so the decision is atomic across any
 * number of processes sharing the Redis or the Cluster, on the Redis server's clock.
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
  neverResend(client);
  client.defineCommand(COMMAND, { lua: luaScript('hit') });
  const run = (client as unknown as HitCommand)[COMMAND].bind(client);
  const standalone = !client.isCluster;

  return {
    async hit(identity: string, rules: readonly RateLimitRule[]): Promise<Decision> {
      if (standalone && AWAY.has(client.status)) {
        throw new Error(`Redis is not connected (status: ${client.status})`);
      }
      const args: (string | number)[] = [rules.length];
      for (const rule of rules) args.push(counterKey(prefix, identity, rule));
      for (const rule of rules) {
        args.push(ALGORITHM_ID[rule.algorithm], rule.limit, rule.windowSeconds * 1000, rule.cost);
      }
      return parseReply(await run(...args), rules.length);
    },
  };
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

function parseReply(reply: unknown, count: number): Decision {
  if (!Array.isArray(reply) || reply.length !== 1 + 3 * count) {
    throw new Error(`Unexpected reply from the rate limit script: ${JSON.stringify(reply)}`);
  }
  const limits: LimitState[] = [];
  for (let i = 0; i < count; i++) {
    limits.push({
      remaining: Number(reply[1 + 3 * i]),
      resetMs: Number(reply[2 + 3 * i]),
      retryAfterMs: Number(reply[3 + 3 * i]),
    });
  }
  return { allowed: reply[0] === 1, limits };
}
