import { isConcurrency, type RateLimitRule } from '../rate-limit-rule';
import { counterKey } from './keys';
import { hitError } from './hit-checks';
import { identityAt, type Decision, type LimitState, type RateLimitStore } from './store';

/** Most counters the cache remembers; beyond, the oldest is forgotten (which is always safe). */
export const BLOCK_CACHE_ENTRIES = 10_000;

/** A block the store gave one limit of a counter: a limit is its algorithm, window and `limit`. */
interface Block {
  /** performance.now() until which a hit of at least `cost` on this limit is blocked. */
  readonly untilMs: number;
  readonly cost: number;
}

/** What the store answered about a counter, seen through one limit, and when that hit was sent. */
interface Answer {
  readonly limit: number;
  readonly state: LimitState;
  readonly sentMs: number;
}

/**
 * What this process knows of one counter (an identity's key: action, algorithm and window): the
 * blocks the store gave, by `limit` (two fields may share an action with different limits, and a
 * block of one says nothing of the other), and the newest answer, overall and by `limit`.
 */
interface Counter {
  readonly blocks: Map<number, Block>;
  readonly answers: Map<number, Answer>;
  newest: Answer;
}

/**
 * `store` with a cache of the blocks it gave: once the store blocks a hit, further hits on that
 * limit of the counter (same algorithm, window and `limit`), of that cost (or more, in a fixed
 * window), are answered blocked in this process without a call, until the wait the store gave
 * has passed, counted from when the blocked hit was SENT (so the cache never outlasts the store's
 * own block). Counters only fill up until their wait is over (a fixed window grows until it ends,
 * a log's units age out in order, a bucket's arrival time only moves on), so the cache never
 * blocks a hit the store would allow, except after a reset made elsewhere (another process's
 * `reset`, or a Cluster refund of a multi-identity hit); `reset` through this store clears it.
 * A limit of another `limit` on the same counter is never blocked by it. A cached answer reports
 * the counter's state from the newest answer this process has for it. Allowed hits cost one Map
 * lookup per limit while anything is cached.
 */
export function withBlockCache<Store extends RateLimitStore>(
  store: Store,
  entries = BLOCK_CACHE_ENTRIES,
): Store {
  const cache = new Map<string, Counter>();
  /**
   * The hit sent for a limit whose cached block just ran out, by block: the others of the flood
   * wait for its answer instead of all reaching the store at once. Single flight.
   */
  const probes = new Map<string, Promise<unknown>>();
  const blockId = (key: string, rule: RateLimitRule): string => `${key} ${rule.limit}`;

  /** Records the store's answer about `key`; `block` when it blocked this limit. */
  const remember = (key: string, answer: Answer, block: Block | undefined): void => {
    let counter = cache.get(key);
    cache.delete(key); // re-inserted last: Map order is age order
    if (counter === undefined) counter = { blocks: new Map(), answers: new Map(), newest: answer };
    counter.newest = answer;
    counter.answers.set(answer.limit, answer);
    if (block) counter.blocks.set(answer.limit, block);
    cache.set(key, counter);
    if (cache.size > entries) cache.delete(cache.keys().next().value as string);
  };

  /**
   * The state of `rule` from the newest answer about its counter: in a window, whichever limit
   * it was given for (units used and the window's end are the same for all); in a bucket, whose
   * time depends on the limit, the newest for this limit.
   */
  const stateOf = (counter: Counter | undefined, rule: RateLimitRule, nowMs: number) => {
    const answer =
      rule.algorithm === 'TOKEN_BUCKET' ? counter?.answers.get(rule.limit) : counter?.newest;
    if (answer === undefined) return { remaining: rule.limit, resetMs: 0 };
    const { state, limit, sentMs } = answer;
    return {
      remaining:
        limit === rule.limit
          ? state.remaining
          : Math.min(rule.limit, Math.max(0, state.remaining + rule.limit - limit)),
      resetMs: Math.max(0, Math.ceil(state.resetMs - (nowMs - sentMs))),
    };
  };

  /**
   * The cached answer for this hit, or undefined when the store must decide it; `ended` gets
   * the blocks that have just run out.
   */
  const cached = (
    keys: readonly string[],
    rules: readonly RateLimitRule[],
    costs: readonly number[] | undefined,
    nowMs: number,
    ended: string[],
  ): Decision | undefined => {
    let blocked = false;
    const waits = keys.map((key, i) => {
      const rule = rules[i] as RateLimitRule;
      const counter = cache.get(key);
      const block = counter?.blocks.get(rule.limit);
      if (counter === undefined || block === undefined) return 0;
      if (block.untilMs <= nowMs) {
        counter.blocks.delete(rule.limit);
        // a counter with no block left is forgotten: allowed hits go back to costing nothing
        if (counter.blocks.size === 0) cache.delete(key);
        ended.push(blockId(key, rule));
        return 0;
      }
      if (!covers(block, rule, costs?.[i])) return 0;
      blocked = true;
      return Math.max(1, Math.ceil(block.untilMs - nowMs));
    });
    if (!blocked) return undefined;
    const limits = keys.map((key, i): LimitState => ({
      ...stateOf(cache.get(key), rules[i] as RateLimitRule, nowMs),
      retryAfterMs: waits[i] as number,
    }));
    return { allowed: false, limits, cached: true };
  };

  /**
   * Whether `block` answers a hit of `cost` on `rule` with the right wait: a hit of the same
   * cost waits as long; a costlier one is blocked too, but in a log or a bucket, waits longer,
   * which only the store can say, so it asks. A window ends for every cost at once.
   */
  const covers = (block: Block, rule: RateLimitRule, cost = rule.cost): boolean =>
    cost === block.cost || (cost > block.cost && rule.algorithm === 'FIXED_WINDOW');

  const keysOf = (identity: string | readonly string[], rules: readonly RateLimitRule[]) =>
    rules.map((rule, i) => counterKey('', identityAt(identity, i), rule));
  /** The keys of a call the store has not checked yet: its own checks' error, not a TypeError. */
  const checkedKeys = (
    identity: string | readonly string[],
    rules: readonly RateLimitRule[],
    costs?: readonly number[],
  ): string[] => {
    const misuse = hitError(identity, rules, costs);
    if (misuse) throw misuse;
    return keysOf(identity, rules);
  };

  // not an async function: the allowed path, the common one, pays for one `then` and no more;
  // what it throws is its rejection, as from an async function
  const hit = (
    identity: string | readonly string[],
    rules: readonly RateLimitRule[],
    costs: readonly number[] | undefined,
    waited: boolean,
  ): Promise<Decision> => {
    try {
      return decide(identity, rules, costs, waited);
    } catch (error) {
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors
      return Promise.reject(error);
    }
  };

  const decide = (
    identity: string | readonly string[],
    rules: readonly RateLimitRule[],
    costs: readonly number[] | undefined,
    waited: boolean,
  ): Promise<Decision> => {
    const sentMs = performance.now();
    // the allowed path pays for keys only while something is cached
    let keys = cache.size > 0 || probes.size > 0 ? checkedKeys(identity, rules, costs) : undefined;
    let ended: string[] | undefined;
    if (keys) {
      ended = [];
      const answer = cached(keys, rules, costs, sentMs, ended);
      if (answer) return Promise.resolve(answer);
      const probe = waited
        ? undefined
        : keys.map((k, i) => probes.get(blockId(k, rules[i] as RateLimitRule))).find(Boolean);
      if (probe) {
        // a block just ran out and one hit is finding out whether it ended: wait for its answer
        const again = (): Promise<Decision> => hit(identity, rules, costs, true);
        return probe.then(again, again);
      }
    }
    const sent = store.hit(identity, rules, costs);
    for (const id of ended ?? []) {
      probes.set(id, sent);
      const done = (): void => {
        if (probes.get(id) === sent) probes.delete(id);
      };
      sent.then(done, done);
    }
    return sent.then((decision) => {
      if (!decision.allowed) keys ??= keysOf(identity, rules);
      if (keys === undefined) return decision;
      const known = keys;
      decision.limits.forEach((state, i) => {
        const key = known[i] as string;
        const rule = rules[i] as RateLimitRule;
        // an allowed hit is news only about counters already cached: their state moved on
        if (decision.allowed && !cache.has(key)) return;
        const cost = costs?.[i] ?? rule.cost;
        // a limit that did not block keeps any live block it has: only its state is news. A
        // CONCURRENCY block is never cached: a slot frees when a call ends, long before its wait
        const block =
          state.retryAfterMs > 0 && !isConcurrency(rule)
            ? { untilMs: sentMs + state.retryAfterMs, cost }
            : undefined;
        remember(key, { limit: rule.limit, state, sentMs }, block);
      });
      return decision;
    });
  };

  return {
    ...store,
    hit: (identity, rules, costs) => hit(identity, rules, costs, false),
    async reset(identity, rules) {
      for (const key of checkedKeys(identity, rules)) cache.delete(key);
      if (!store.reset) throw new Error('the store does not implement reset');
      await store.reset(identity, rules);
    },
  };
}
