import { RateLimitConfigError } from '../errors';
import { counterKey } from '../keys';
import type { RateLimitAlgorithm, RateLimitRule } from '../algorithms';
import { hitError, identityAt, type Decision, type LimitState, type RateLimitStore } from './store';

/** Options of {@link createMemoryStore}. */
export interface MemoryStoreOptions {
  /** The clock, in milliseconds. Tests inject one. @default Date.now */
  readonly now?: (() => number) | undefined;
  /**
   * Most counters held at once: one per identity and limit with a hit counted within its window.
   * In a full store, a hit that needs a new counter first drops expired ones, and is refused
   * with an error when none was found (the directive's `onStoreError`, or its fallback store,
   * answers it), while hits on existing counters are decided as usual. Counters in use are never
   * evicted to make room: forgetting one would give its identity its units back, so a flood of
   * new identities could buy anyone a fresh limit. @default 1_000_000
   */
  readonly maxEntries?: number | undefined;
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
  tat: ExactTime;
}

/**
 * A time kept exactly, as `lua/hit.lua` keeps a bucket's TAT: whole microseconds and a remainder
 * in units of 1/limit microsecond (0 <= rem < limit), so that intervals of window/limit add up
 * without rounding. See the script for why every value stays an exact integer.
 */
interface ExactTime {
  readonly us: number;
  readonly rem: number;
}

/** A limit decided but not yet consumed: `commit` writes it, and is called only if all pass. */
interface Pending {
  readonly state: LimitState;
  commit(): { entry: Entry; state: LimitState };
}

type Algorithm = (entry: Entry | undefined, rule: RateLimitRule, nowUs: number) => Pending;

const toMs = (us: number): number => Math.ceil(us / 1000);
const newEntry = (): Entry => ({ expiresAtUs: 0, count: 0, log: [], tat: { us: 0, rem: 0 } });

/** The first whole microsecond at or after `t`. */
const ceilUs = (t: ExactTime): number => (t.rem > 0 ? t.us + 1 : t.us);

/** `t` plus `count` intervals of window/limit (`%` is exact on doubles). */
function advance(t: ExactTime, count: number, windowUs: number, limit: number): ExactTime {
  const r = windowUs % limit;
  const q = (windowUs - r) / limit;
  const parts = count * r;
  const extra = parts % limit;
  const us = t.us + count * q + (parts - extra) / limit;
  const rem = t.rem + extra;
  return rem >= limit ? { us: us + 1, rem: rem - limit } : { us, rem };
}

/** Whole tokens left once the TAT is `t`: intervals that fit between it and now + window. */
function tokens(nowUs: number, windowUs: number, t: ExactTime, limit: number): number {
  const fits = (count: number): boolean =>
    ceilUs(advance(t, count, windowUs, limit)) <= nowUs + windowUs;
  // an estimate within one of the count, made exact by the integer comparisons
  let n = Math.floor(((nowUs + windowUs - t.us - t.rem / limit) / windowUs) * limit);
  n = Math.min(Math.max(n, 0), limit);
  while (n < limit && fits(n + 1)) n++;
  while (n > 0 && !fits(n)) n--;
  return n;
}

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
    // a remainder left by a limit of another size on this key rounds up, as in the script
    const kept = entry && entry.tat.rem >= limit ? { us: entry.tat.us + 1, rem: 0 } : entry?.tat;
    const tat = kept && kept.us >= nowUs ? kept : { us: nowUs, rem: 0 };
    const next = advance(tat, cost, windowUs, limit);
    const over = ceilUs(next) - nowUs - windowUs;
    return {
      state: {
        remaining: tokens(nowUs, windowUs, tat, limit),
        resetMs: toMs(ceilUs(tat) - nowUs),
        retryAfterMs: over > 0 ? toMs(over) : 0,
      },
      commit() {
        return {
          entry: { ...newEntry(), tat: next, expiresAtUs: ceilUs(next) },
          state: {
            remaining: tokens(nowUs, windowUs, next, limit),
            resetMs: toMs(ceilUs(next) - nowUs),
            retryAfterMs: 0,
          },
        };
      },
    };
  },
};

/**
 * Entries looked at for expiry on each hit. Each hit creates at most one entry per rule, so a
 * few more than that keep the expired ones from piling up, in bounded work per hit rather than
 * a pass over every entry that would stall the event loop.
 */
const SWEEP_PER_HIT = 16;
/** Entries looked at, at most, to make room for a hit's new counters in a full store. */
const RECLAIM_PER_HIT = 1_024;

const DEFAULTS = { maxEntries: 1_000_000 } as const;

/**
 * A store in this process's memory, for users without Redis: the same decisions as the Redis
 * store, exact within one process (a hit is decided synchronously, so nothing interleaves),
 * but not shared between processes. Entries are forgotten once their limit is whole again: each
 * hit looks at a few entries, in the order they were made, and drops the expired ones.
 */
export function createMemoryStore(options: MemoryStoreOptions = {}): RateLimitStore {
  const now = options.now ?? Date.now;
  const maxEntries = options.maxEntries ?? DEFAULTS.maxEntries;
  if (!Number.isSafeInteger(maxEntries) || maxEntries < 1) {
    throw new RateLimitConfigError(
      `createMemoryStore: maxEntries must be a whole number >= 1, got ${String(maxEntries)}`,
    );
  }
  const entries = new Map<string, Entry>();
  // a Map iterates in insertion order and survives deletions, so the sweep resumes where it was
  let cursor = entries.entries();

  const live = (key: string, nowUs: number): Entry | undefined => {
    const entry = entries.get(key);
    if (entry && entry.expiresAtUs <= nowUs) {
      entries.delete(key);
      return undefined;
    }
    return entry;
  };

  const sweep = (nowUs: number, budget: number): void => {
    for (let seen = 0; seen < budget && entries.size > 0; seen++) {
      let step = cursor.next();
      if (step.done) {
        cursor = entries.entries();
        step = cursor.next();
        if (step.done) return;
      }
      const [key, entry] = step.value;
      if (entry.expiresAtUs <= nowUs) entries.delete(key);
    }
  };

  return {
    hit(identity, rules, costs): Promise<Decision> {
      const misuse = hitError(identity, rules, costs);
      if (misuse) return Promise.reject(misuse);
      // whole microseconds, as Redis' TIME gives them: the bucket's arithmetic stays in integers
      const nowUs = Math.floor(now() * 1000);
      sweep(nowUs, SWEEP_PER_HIT);
      const keys = rules.map((rule, i) => counterKey('', identityAt(identity, i), rule));
      const found = keys.map((key) => live(key, nowUs));
      const pending = rules.map((rule, i) => {
        const cost = costs?.[i];
        const costed = cost === undefined || cost === rule.cost ? rule : { ...rule, cost };
        return ALGORITHMS[rule.algorithm](found[i], costed, nowUs);
      });
      if (pending.some((p) => p.state.retryAfterMs > 0)) {
        return Promise.resolve({ allowed: false, limits: pending.map((p) => p.state) });
      }
      const added = found.filter((entry) => entry === undefined).length;
      if (entries.size + added > maxEntries) {
        sweep(nowUs, RECLAIM_PER_HIT);
        if (entries.size + added > maxEntries) {
          return Promise.reject(
            new Error(
              `Memory store full: ${maxEntries} counters in use (maxEntries); a hit that needs ` +
                'a new counter is refused until some expire',
            ),
          );
        }
      }
      const limits = pending.map((p, i) => {
        const { entry, state } = p.commit();
        entries.set(keys[i] as string, entry);
        return state;
      });
      return Promise.resolve({ allowed: true, limits });
    },

    peek(identity, rules): Promise<LimitState[]> {
      const misuse = hitError(identity, rules);
      if (misuse) return Promise.reject(misuse);
      const nowUs = Math.floor(now() * 1000);
      return Promise.resolve(
        rules.map((rule) => {
          const entry = live(counterKey('', identity, rule), nowUs);
          const { remaining, resetMs } = ALGORITHMS[rule.algorithm](entry, rule, nowUs).state;
          return { remaining, resetMs, retryAfterMs: 0 };
        }),
      );
    },

    reset(identity, rules): Promise<void> {
      const misuse = hitError(identity, rules);
      if (misuse) return Promise.reject(misuse);
      for (const rule of rules) entries.delete(counterKey('', identity, rule));
      return Promise.resolve();
    },
  };
}
