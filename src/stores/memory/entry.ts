/*
 * The counters of the memory store, and the exact time arithmetic its TOKEN_BUCKET shares with
 * `lua/hit.lua` and `lua/refund.lua`.
 */

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
  /**
   * CONCURRENCY: when each slot's lease expires, by member (`token:j`, as lua/lib/concurrency.lua
   * names it). Live while its time is ahead.
   */
  leases?: Map<string, number>;
}

/**
 * A time kept exactly, as `lua/hit.lua` keeps a bucket's TAT: whole microseconds and a remainder
 * in units of 1/limit microsecond (0 <= rem < limit), so that intervals of window/limit add up
 * without rounding. See the script for why every value stays an exact integer.
 */
export interface ExactTime {
  readonly us: number;
  readonly rem: number;
}

/** Microseconds as whole milliseconds, rounded up. */
export const toMs = (us: number): number => Math.ceil(us / 1000);
/** A counter with nothing counted yet. */
export const newEntry = (): Entry => ({
  expiresAtUs: 0,
  count: 0,
  log: [],
  tat: { us: 0, rem: 0 },
});

/** The first whole microsecond at or after `t`. */
export const ceilUs = (t: ExactTime): number => (t.rem > 0 ? t.us + 1 : t.us);

/** `t` plus `count` intervals of window/limit (`%` is exact on doubles). */
export function advance(t: ExactTime, count: number, windowUs: number, limit: number): ExactTime {
  const r = windowUs % limit;
  const q = (windowUs - r) / limit;
  const parts = count * r;
  const extra = parts % limit;
  const us = t.us + count * q + (parts - extra) / limit;
  const rem = t.rem + extra;
  return rem >= limit ? { us: us + 1, rem: rem - limit } : { us, rem };
}

/** Whole tokens left once the TAT is `t`: intervals that fit between it and now + window. */
export function tokens(nowUs: number, windowUs: number, t: ExactTime, limit: number): number {
  const fits = (count: number): boolean =>
    ceilUs(advance(t, count, windowUs, limit)) <= nowUs + windowUs;
  // an estimate within one of the count, made exact by the integer comparisons
  let n = Math.floor(((nowUs + windowUs - t.us - t.rem / limit) / windowUs) * limit);
  n = Math.min(Math.max(n, 0), limit);
  while (n < limit && fits(n + 1)) n++;
  while (n > 0 && !fits(n)) n--;
  return n;
}
