import { counterKey } from '../keys';
import type { RateLimitAlgorithm, RateLimitRule } from '../algorithms';
import { identityAt, type Decision, type LimitState, type RateLimitStore } from './store';

/** Options of {@link createMemoryStore}. */
export interface MemoryStoreOptions {
  /** The clock, in milliseconds. Tests inject one. @default Date.now */
  readonly now?: (() => number) | undefined;
}

/** A counter's state; which fields are used depends on the algorithm that owns the key. */
interface Entry {
  /** When the entry can be forgotten: the limit is whole again. */
  expiresAtUs: number;
  /** FIXED_WINDOW: units taken in the current window. */
  count: number;
  /** SLIDING_WINDOW: one timestamp per unit taken, oldest first. */
  log: number[];
  /** TOKEN_BUCKET: the theoretical arrival time at which the bucket is full again. */
  tat: number;
}

/** A limit decided but not yet consumed: `commit` writes it, and is called only if all pass. */
interface Pending {
  readonly state: LimitState;
  commit(): { entry: Entry; state: LimitState };
}

type Algorithm = (entry: Entry | undefined, rule: RateLimitRule, nowUs: number) => Pending;

const toMs = (us: number): number => Math.ceil(us / 1000);
const newEntry = (): Entry => ({ expiresAtUs: 0, count: 0, log: [], tat: 0 });

/** The same arithmetic as `lua/hit.lua`; see there for what each algorithm guarantees. */
const ALGORITHMS: Record<RateLimitAlgorithm, Algorithm> = {
  FIXED_WINDOW(entry, { limit, windowSeconds, cost }, nowUs) {
    const windowUs = windowSeconds * 1e6;
    const used = entry?.count ?? 0;
    const ttlUs = entry ? entry.expiresAtUs - nowUs : windowUs;
    return {
      state: {
        remaining: limit - used,
        resetMs: toMs(ttlUs),
        retryAfterMs: used + cost > limit ? toMs(ttlUs) : 0,
      },
      commit() {
        const next = entry ?? { ...newEntry(), expiresAtUs: nowUs + windowUs };
        next.count += cost;
        return {
          entry: next,
          state: {
            remaining: limit - next.count,
            resetMs: toMs(next.expiresAtUs - nowUs),
            retryAfterMs: 0,
          },
        };
      },
    };
  },

  SLIDING_WINDOW(entry, { limit, windowSeconds, cost }, nowUs) {
    const windowUs = windowSeconds * 1e6;
    const since = nowUs - windowUs;
    const log = entry?.log ?? [];
    const live = log.filter((t) => t > since);
    const used = live.length;
    const newest = live[used - 1];
    const excess = used + cost - limit;
    const oldestToLeave = excess > 0 ? (live[excess - 1] as number) : undefined;
    return {
      state: {
        remaining: limit - used,
        resetMs: newest === undefined ? 0 : toMs(newest + windowUs - nowUs),
        retryAfterMs: oldestToLeave === undefined ? 0 : toMs(oldestToLeave + windowUs - nowUs),
      },
      commit() {
        for (let j = 0; j < cost; j++) live.push(nowUs);
        return {
          entry: { ...newEntry(), log: live, expiresAtUs: nowUs + windowUs },
          state: { remaining: limit - live.length, resetMs: toMs(windowUs), retryAfterMs: 0 },
        };
      },
    };
  },

  TOKEN_BUCKET(entry, { limit, windowSeconds, cost }, nowUs) {
    const windowUs = windowSeconds * 1e6;
    const interval = windowUs / limit;
    const tat = Math.max(entry?.tat ?? 0, nowUs);
    const nextTat = tat + Math.max(1, Math.ceil(cost * interval));
    const tokens = (until: number): number =>
      Math.floor((nowUs + windowUs - until) / interval + 1e-9);
    return {
      state: {
        remaining: tokens(tat),
        resetMs: toMs(tat - nowUs),
        retryAfterMs: nextTat - nowUs > windowUs ? toMs(nextTat - windowUs - nowUs) : 0,
      },
      commit() {
        return {
          entry: { ...newEntry(), tat: nextTat, expiresAtUs: nextTat },
          state: { remaining: tokens(nextTat), resetMs: toMs(nextTat - nowUs), retryAfterMs: 0 },
        };
      },
    };
  },
};

const SWEEP_INTERVAL_US = 1e6;

/**
 * A store in this process's memory, for users without Redis: the same decisions as the Redis
 * store, exact within one process (a hit is decided synchronously, so nothing interleaves),
 * but not shared between processes. Entries are forgotten once their limit is whole again.
 */
export function createMemoryStore(options: MemoryStoreOptions = {}): RateLimitStore {
  const now = options.now ?? Date.now;
  const entries = new Map<string, Entry>();
  let lastSweepUs = now() * 1000;

  const live = (key: string, nowUs: number): Entry | undefined => {
    const entry = entries.get(key);
    if (entry && entry.expiresAtUs <= nowUs) {
      entries.delete(key);
      return undefined;
    }
    return entry;
  };

  const sweep = (nowUs: number): void => {
    if (nowUs - lastSweepUs < SWEEP_INTERVAL_US) return;
    lastSweepUs = nowUs;
    for (const [key, entry] of entries) if (entry.expiresAtUs <= nowUs) entries.delete(key);
  };

  return {
    hit(identity, rules, costs): Promise<Decision> {
      const nowUs = now() * 1000;
      sweep(nowUs);
      const keys = rules.map((rule, i) => counterKey('', identityAt(identity, i), rule));
      const pending = rules.map((rule, i) => {
        const cost = costs?.[i];
        const costed = cost === undefined || cost === rule.cost ? rule : { ...rule, cost };
        return ALGORITHMS[rule.algorithm](live(keys[i] as string, nowUs), costed, nowUs);
      });
      if (pending.some((p) => p.state.retryAfterMs > 0)) {
        return Promise.resolve({ allowed: false, limits: pending.map((p) => p.state) });
      }
      const limits = pending.map((p, i) => {
        const { entry, state } = p.commit();
        entries.set(keys[i] as string, entry);
        return state;
      });
      return Promise.resolve({ allowed: true, limits });
    },
  };
}
