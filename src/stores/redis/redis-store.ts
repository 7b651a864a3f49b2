import type { RateLimitRule } from '../../rate-limit-rule';
import { RateLimitConfigError } from '../../errors';
import { checkPrefix, counterKey, hashTag } from '../keys';
import { hitAcrossTags, peekAcrossTags, splitByTag, type TagPart } from './across-tags';
import { withBlockCache } from '../block-cache';
import type { RedisStoreClient } from './clients';
import { connectionGate, openConnection, readyWithin } from './connection';
import { evalScript } from './eval-script';
import { REFUND_SCRIPT, packRefund, parseRefundReply } from './refund-script';
import { createHitQueue } from './hit-batches';
import { leaseTokenFor, redisLeases } from './leases';
import { redisOperations } from './operation-script';
import { HIT_SCRIPT, type PackedHit, type Receipt } from './hit-script';
import { checkingVersion } from './server-version';
import { setUp } from './setup';
import { redisTakeAndRefund } from './take-and-refund';
import { hitError } from '../hit-checks';
import type { ClosableStore, Decision, LimitState } from '../store';

/** Options of {@link createRedisStore}. */
export interface RedisStoreOptions {
  /**
   * The application's Redis client: an ioredis or iovalkey `Redis` or `Cluster`, or a node-redis
   * client (`createClient`) or cluster (`createCluster`), told apart by what it is. The store
   * only reads it: it opens a connection of its own from it (`duplicate()`: same address,
   * database, credentials, TLS, and a Cluster's nodes), which `close()` closes, as does closing
   * `client`.
   */
  readonly client: RedisStoreClient;
  /** Prepended to every key; must not contain `{` or `}`. @default 'rl:' */
  readonly prefix?: string | undefined;
  /**
   * Most hits decided by one script call. Hits made in the same turn of the event loop are
   * coalesced into one call (on a Cluster, those of one pass of the event loop, one call per
   * master), which the script decides one after the other, each atomically; 1 sends every hit
   * on its own. @default 128
   */
  readonly maxBatch?: number | undefined;
  /**
   * Once Redis blocks a limit for an identity, answer further hits on it (that action, algorithm,
   * window and `limit`; of the same cost, or more in a fixed window) as blocked in this process,
   * without a Redis call, until the wait
   * Redis gave has passed: a flood of blocked hits costs Redis about one call per block. It
   * never blocks a hit Redis would allow, except after a `reset` made by another process (until
   * that block's wait runs out); a `reset` through this store clears it. At most 10,000
   * counters are remembered.
   * @default true
   */
  readonly blockCache?: boolean | undefined;
  /**
   * How long a hit may wait for a connection being opened (the store's own connection, or that
   * of a Cluster master) before it fails, unsent. Keep
   * it below the directive's `timeoutMs`: a hit still waiting when its caller was answered must
   * never be sent. Once a client has not been ready for this long, hits fail at once.
   * @default 200
   */
  readonly connectWaitMs?: number | undefined;
  /**
   * How long a hit that arrives while the store sets itself up (when it is made, or once its
   * connection is ready again after a drop: connecting, reading every master's version, loading
   * its Lua) may wait for that set-up while it makes no step (counted from when it began, and
   * again from each step: a connection ready, a version read, the Lua loaded; in time the event
   * loop was free, so a stalled process spends none of it); only then does the
   * hit's own deadline (`connectWaitMs`, the directive's `timeoutMs`) start. So the first burst
   * on a fresh store is decided as exactly as any later one, without `ready()`. A set-up that
   * cannot finish (Redis down, credentials refused) holds hits no longer than this, and holds
   * none once an attempt failed: they then fail as any hit without Redis does (`onStoreError`,
   * `fallbackStore`). 0 never holds a hit.
   * @default 5000
   */
  readonly setupWaitMs?: number | undefined;
}

const DEFAULTS = {
  prefix: 'rl:',
  maxBatch: 128,
  blockCache: true,
  connectWaitMs: 200,
  setupWaitMs: 5_000,
} as const;

/**
 * A store on Redis: hits are decided by EVALSHA of `lua/hit.lua` (EVAL when, and only when,
 * Redis answers NOSCRIPT: src/stores/redis/eval-script.ts), so each decision is atomic across any
 * number of processes sharing the Redis or the Cluster, on the Redis server's clock. Hits made
 * in the same turn of the event loop share one script call (see `maxBatch`): the script decides
 * them one after the other, exactly as if they had arrived in that order, and the fixed cost
 * of a call is paid once per batch instead of once per hit. On a Cluster a batch holds the hits
 * of one master, whatever their slots (src/stores/redis/hit-batches.ts).
 *
 * On a Cluster, a hit whose limits count against several identities (`by`) has keys under
 * several hash tags; when they live on several masters, which no one script can reach, it is
 * decided tag by tag, each part atomically on its master, and the parts taken are refunded
 * when a later one blocks (src/stores/redis/across-tags.ts). It is never admitted beyond any limit,
 * and once it is answered blocked it holds no unit, unless a fault interrupted it.
 *
 * A hit reaches Redis while its caller waits, or never (see connection.ts): the store runs on
 * a connection of its own, made from `client` and opened without an offline queue, without the
 * resending of in-flight commands after a reconnection and without retries after a failover; a
 * hit never waits in one of the client's queues, to be counted after its request was answered, and
 * is never resent after its connection dropped. Such a hit fails instead, and the directive's
 * `onStoreError` policy answers it. `client` itself is never changed. `close()` closes the
 * store's connection; so does closing `client`.
 */
export function createRedisStore(options: RedisStoreOptions): ClosableStore {
  const { client } = options ?? {};
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
  const setupWaitMs = options.setupWaitMs ?? DEFAULTS.setupWaitMs;
  if (typeof setupWaitMs !== 'number' || !Number.isFinite(setupWaitMs) || setupWaitMs < 0) {
    throw new RateLimitConfigError(
      `createRedisStore: setupWaitMs must be a number of milliseconds >= 0, got ${String(setupWaitMs)}`,
    );
  }
  // the client's family is told here: a client of none is refused before anything is opened
  const own = openConnection(client);
  const { connection } = own;
  const unready = connectionGate(own, connectWaitMs);
  // versions read and Lua loaded when the connection is ready, before the hits need them
  const setup = setUp(connection, () => own.ended);
  const runRefund = (...args: (string | number)[]): Promise<unknown> =>
    evalScript(connection, REFUND_SCRIPT, args, undefined, setup);
  const queueScript = createHitQueue({
    run: (args, mayReload) => evalScript(connection, HIT_SCRIPT, args, mayReload, setup),
    connection,
    prefix,
    maxBatch,
    connectWaitMs,
    unready,
    acrossTags: (hit) => decideAcrossTags(hit),
  });
  // a feature the server lacks is refused with one clear error, not a script error
  const queueHit = checkingVersion(
    connection,
    queueScript,
    connectWaitMs,
    (target) => readyWithin(target, connectWaitMs),
    setup.versions,
  );

  const enqueue = (
    identity: string | readonly string[],
    rules: readonly RateLimitRule[],
    costs: readonly number[] | undefined,
    kind: 'hit' | 'peek',
  ): Promise<Decision> => {
    const misuse = hitError(identity, rules, costs);
    if (misuse) return Promise.reject(misuse);
    if (kind === 'peek') return queueHit({ kind, identity, rules, costs });
    const lease = leaseTokenFor(rules);
    if (lease === undefined) return queueHit({ kind, identity, rules, costs });
    // a hit on CONCURRENCY limits holds its slots, named by its token, until they are released
    return queueHit({ kind, identity, rules, costs, lease }).then((decision) =>
      decision.allowed
        ? { ...decision, lease: { token: lease, identity, rules, costs } }
        : decision,
    );
  };

  // a hit on several hash tags of a cluster: its parts join the next batches of their tags
  const steps = {
    take: ({ identity, rules, costs }: TagPart, receipts: boolean, lease?: string) =>
      queueHit({ kind: receipts ? 'take' : 'hit', identity, rules, costs, lease }),
    peek: ({ identity, rules, costs }: TagPart) =>
      queueHit({ kind: 'peek', identity, rules, costs }),
    refund: refundWith(runRefund, prefix),
  };
  const decideAcrossTags = (hit: PackedHit): Promise<Decision> => {
    const parts = splitByTag(hit.identity, hit.rules, hit.costs);
    return hit.kind === 'peek'
      ? peekAcrossTags(parts, hit.rules, steps.peek)
      : hitAcrossTags(parts, hit.rules, steps, hit.lease);
  };

  const store: ClosableStore = {
    hit: (identity, rules, costs) => enqueue(identity, rules, costs, 'hit'),
    ...redisTakeAndRefund(queueHit),
    ...redisLeases(
      connection,
      prefix,
      unready,
      () => readyWithin(connection, connectWaitMs),
      setup,
      queueHit,
    ),
    ...redisOperations(
      connection,
      prefix,
      unready,
      () => readyWithin(connection, connectWaitMs),
      setup,
    ),

    async peek(identity, rules): Promise<LimitState[]> {
      const { limits } = await enqueue(identity, rules, undefined, 'peek');
      return limits.map(({ remaining, resetMs }) => ({ remaining, resetMs, retryAfterMs: 0 }));
    },

    async reset(identity, rules): Promise<void> {
      const misuse = hitError(identity, rules);
      if (misuse) throw misuse;
      const refusal = unready();
      if (refusal !== undefined) throw new Error(refusal);
      await readyWithin(connection, connectWaitMs);
      // the keys of one source share a hash tag: one DEL per source (so one for the directive's
      // reset, whose rules have one source), which a cluster can run
      const bySource = groupBy(rules, (rule) => hashTag(identity, rule));
      await Promise.all(
        [...bySource.values()].map((same) => {
          const keys = [...new Set(same.map((rule) => counterKey(prefix, identity, rule)))];
          return connection.send(['DEL', ...keys], keys[0]);
        }),
      );
    },

    ready: () =>
      own.closed ? Promise.reject(new Error('The rate limit store is closed')) : setup.ready(),

    settingUp: () => (own.closed ? undefined : setup.pending(setupWaitMs)),

    close: () => own.close(),
  };
  return blockCache ? withBlockCache(store) : store;
}

/**
 * Refunds what a part of a hit took, by `lua/refund.lua` on the part's master. Each call is on
 * its own: these refunds are rare (a multi-identity hit blocked after a part passed).
 */
function refundWith(
  run: (...args: (string | number)[]) => Promise<unknown>,
  prefix: string,
): (part: TagPart, receipts: readonly Receipt[]) => Promise<boolean[]> {
  return async ({ identity, rules, costs }, receipts) => {
    const taken = { identity, rules, costs, receipts };
    const { keys, argv } = packRefund(prefix, taken);
    return parseRefundReply(await run(keys.length, ...keys, ...argv), taken);
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
