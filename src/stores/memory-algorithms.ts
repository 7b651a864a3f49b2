import type { RateLimitAlgorithm, RateLimitRule } from '../algorithms';
import type { LimitState } from './store';

/** A counter's state; which fields are used depends on the algorithm that owns the key. */
export interface Entry {
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
export const MEMORY_ALGORITHMS: Record<RateLimitAlgorithm, Algorithm> = {
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
