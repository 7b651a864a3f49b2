import type { RateLimitRule } from '../rate-limit-rule';
import { counterKey } from '../keys';
import { identityAt, type Decision, type LimitState, type RateLimitStore } from './store';

/** Most counters the cache remembers; beyond, the oldest is forgotten (which is always safe). */
export const BLOCK_CACHE_ENTRIES = 10_000;

/** What the store last said about one counter when it blocked a hit that used it. */
interface Entry {
  /** performance.now() until which a hit of at least `cost` is blocked; 0 when it was not. */
  readonly untilMs: number;
  readonly cost: number;
  /** The counter's state as the store gave it, and when the hit was sent. */
  readonly state: LimitState;
  readonly sentMs: number;
}

/**
 * `store` with a cache of the blocks it gave: once the store blocks a hit, further hits on a
 * blocked counter, of that cost (or more, in a fixed window), are answered blocked in this process without a call,
 * until the wait the store gave has passed, counted from when the blocked hit was SENT (so the
 * cache never outlasts the store's own block). Counters only fill up until their wait is over
 * (a fixed window grows until it ends, a log's units age out in order, a bucket's arrival time
 * only moves on), so the cache never blocks a hit the store would allow, except after a reset
 * made elsewhere (another process's `reset`, or a Cluster give-back of a multi-identity hit);
 * `reset` through this store clears it. Allowed hits cost one Map lookup per limit.
 */
export function withBlockCache(
  store: RateLimitStore,
  entries = BLOCK_CACHE_ENTRIES,
): RateLimitStore {
  const cache = new Map<string, Entry>();
  /**
   * The hit sent for a counter whose cached block just ran out, by counter: the others of the
   * flood wait for its answer instead of all reaching the store at once. Single flight.
   */
  const probes = new Map<string, Promise<unknown>>();

  const remember = (key: string, entry: Entry): void => {
    cache.delete(key); // re-inserted last: Map order is age order
    cache.set(key, entry);
    if (cache.size > entries) cache.delete(cache.keys().next().value as string);
  };

  /**
   * The cached answer for this hit, or undefined when the store must decide it; `ended` gets
   * the counters whose cached block has just run out.
   */
  const cached = (
    keys: readonly string[],
    rules: readonly RateLimitRule[],
    costs: readonly number[] | undefined,
    nowMs: number,
    ended: string[],
  ): Decision | undefined => {
    let blocked = false;
    for (let i = 0; i < keys.length; i++) {
      const entry = cache.get(keys[i] as string);
      if (entry === undefined) continue;
      if (entry.untilMs <= nowMs) {
        if (entry.untilMs > 0) {
          cache.delete(keys[i] as string);
          ended.push(keys[i] as string);
        }
        continue;
      }
      if (covers(entry, rules[i] as RateLimitRule, costs?.[i])) blocked = true;
    }
    if (!blocked) return undefined;
    const limits = keys.map((key, i): LimitState => {
      const entry = cache.get(key);
      const rule = rules[i] as RateLimitRule;
      if (entry === undefined) return { remaining: rule.limit, resetMs: 0, retryAfterMs: 0 };
      const elapsed = nowMs - entry.sentMs;
      return {
        remaining: entry.state.remaining,
        resetMs: Math.max(0, Math.ceil(entry.state.resetMs - elapsed)),
        retryAfterMs:
          entry.untilMs > nowMs && covers(entry, rule, costs?.[i])
            ? Math.max(1, Math.ceil(entry.untilMs - nowMs))
            : 0,
      };
    });
    return { allowed: false, limits, cached: true };
  };

  /**
   * Whether a block of `entry` answers a hit of `cost` on `rule` with the right wait: a hit of
   * the same cost waits as long; a costlier one is blocked too, but in a log or a bucket,
   * waits longer, which only the store can say, so it asks. A window ends for every cost at once.
   */
  const covers = (entry: Entry, rule: RateLimitRule, cost = rule.cost): boolean =>
    cost === entry.cost || (cost > entry.cost && rule.algorithm === 'FIXED_WINDOW');

  const keysOf = (identity: string | readonly string[], rules: readonly RateLimitRule[]) =>
    rules.map((rule, i) => counterKey('', identityAt(identity, i), rule));

  const hit = async (
    identity: string | readonly string[],
    rules: readonly RateLimitRule[],
    costs: readonly number[] | undefined,
    waited: boolean,
  ): Promise<Decision> => {
    const sentMs = performance.now();
    // the allowed path pays for keys only while something is cached
    let keys = cache.size > 0 || probes.size > 0 ? keysOf(identity, rules) : undefined;
    const ended: string[] = [];
    if (keys) {
      const answer = cached(keys, rules, costs, sentMs, ended);
      if (answer) return answer;
      const probe = waited ? undefined : keys.map((k) => probes.get(k)).find(Boolean);
      if (probe) {
        // a block just ran out and one hit is finding out whether it ended: wait for its answer
        await probe.catch(() => undefined);
        return hit(identity, rules, costs, true);
      }
    }
    const sent = store.hit(identity, rules, costs);
    for (const key of ended) {
      probes.set(key, sent);
      const done = (): void => {
        if (probes.get(key) === sent) probes.delete(key);
      };
      sent.then(done, done);
    }
    const decision = await sent;
    if (!decision.allowed) {
      keys ??= keysOf(identity, rules);
      decision.limits.forEach((state, i) => {
        const cost = costs?.[i] ?? (rules[i] as RateLimitRule).cost;
        const untilMs = state.retryAfterMs > 0 ? sentMs + state.retryAfterMs : 0;
        // a counter that did not block keeps any live block it has: only its state is news
        const key = (keys as string[])[i] as string;
        const live = cache.get(key);
        if (untilMs === 0 && live !== undefined && live.untilMs > performance.now()) return;
        remember(key, { untilMs, cost, state, sentMs });
      });
    }
    return decision;
  };

  return {
    ...store,
    hit: (identity, rules, costs) => hit(identity, rules, costs, false),
    async reset(identity, rules) {
      for (const key of keysOf(identity, rules)) cache.delete(key);
      if (!store.reset) throw new Error('the store does not implement reset');
      await store.reset(identity, rules);
    },
  };
}
