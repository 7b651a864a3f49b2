import type { RateLimitAlgorithm, RateLimitRule } from '../../rate-limit-rule';
import { advance, ceilUs, newEntry, tokens, toMs, type Entry } from './entry';
import { leaseMember } from './leases';
import type { LimitState } from '../store';

/** A limit decided but not yet consumed: `commit` writes it, and is called only if all pass. */
export interface Pending {
  readonly state: LimitState;
  commit(): { entry: Entry; state: LimitState };
}

/** `token` names the slots a CONCURRENCY hit takes; undefined for a peek, which commits nothing. */
export type Algorithm = (
  entry: Entry | undefined,
  rule: RateLimitRule,
  nowUs: number,
  token?: string,
) => Pending;

/**
 * How the memory store decides a hit on one limit: the same arithmetic as `lua/hit.lua`; see
 * there for what each algorithm guarantees.
 */
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
  CONCURRENCY(entry, { limit, windowSeconds, cost }, nowUs, token) {
    const leaseUs = windowSeconds * 1e6;
    const leases = entry?.leases ?? new Map<string, number>();
    const live = [...leases.values()].filter((t) => t > nowUs).sort((a, b) => a - b);
    const used = live.length;
    const excess = used + cost - limit;
    const oldest = live[0];
    return {
      state: {
        remaining: limit - used,
        resetMs: oldest === undefined ? 0 : toMs(oldest - nowUs),
        retryAfterMs: excess > 0 ? toMs((live[excess - 1] as number) - nowUs) : 0,
      },
      commit() {
        if (token === undefined) throw new Error('a CONCURRENCY hit needs a lease token');
        const kept = new Map([...leases].filter(([, t]) => t > nowUs));
        for (let j = 1; j <= cost; j++) kept.set(leaseMember(token, j), nowUs + leaseUs);
        return {
          entry: { ...newEntry(), leases: kept, expiresAtUs: nowUs + leaseUs },
          state: {
            remaining: limit - kept.size,
            resetMs: oldest === undefined ? toMs(leaseUs) : toMs(oldest - nowUs),
            retryAfterMs: 0,
          },
        };
      },
    };
  },
};
