import { counterKey } from '../keys';
import type { RateLimitAlgorithm, RateLimitRule } from '../rules';
import type { Decision, LimitState, RateLimitStore } from './store';

/** Options of {@link createMemoryStore}. */
export interface MemoryStoreOptions {
  /** The clock, in milliseconds. Tests inject one. @default Date.now */
  readonly now?: (() => number) | undefined;
}

interface Entry {
  count: number;
  expiresAtMs: number;
}

interface Pending {
  readonly key: string;
  readonly rule: RateLimitRule;
  readonly entry: Entry | undefined;
  readonly state: LimitState;
}

interface Algorithm {
  decide(entry: Entry | undefined, rule: RateLimitRule, nowMs: number): LimitState;
  consume(
    entry: Entry | undefined,
    rule: RateLimitRule,
    nowMs: number,
  ): { entry: Entry; state: LimitState };
}

const fixedWindow: Algorithm = {
  decide(entry, rule, nowMs) {
    const used = entry?.count ?? 0;
    const ttl = entry ? entry.expiresAtMs - nowMs : rule.windowSeconds * 1000;
    return {
      remaining: rule.limit - used,
      resetMs: ttl,
      retryAfterMs: used + rule.cost > rule.limit ? ttl : 0,
    };
  },
  consume(entry, rule, nowMs) {
    const next = entry
      ? { count: entry.count + rule.cost, expiresAtMs: entry.expiresAtMs }
      : { count: rule.cost, expiresAtMs: nowMs + rule.windowSeconds * 1000 };
    return {
      entry: next,
      state: {
        remaining: rule.limit - next.count,
        resetMs: next.expiresAtMs - nowMs,
        retryAfterMs: 0,
      },
    };
  },
};

const ALGORITHMS: Partial<Record<RateLimitAlgorithm, Algorithm>> = { FIXED_WINDOW: fixedWindow };

const SWEEP_INTERVAL_MS = 1000;

/**
 * A store in this process's memory, for users without Redis: the same decisions as the Redis
 * store, exact within one process (a hit is decided synchronously, so nothing interleaves),
 * but not shared between processes. Expired counters are dropped as the clock moves on.
 */
export function createMemoryStore(options: MemoryStoreOptions = {}): RateLimitStore {
  const now = options.now ?? Date.now;
  const entries = new Map<string, Entry>();
  let lastSweepMs = now();

  const live = (key: string, nowMs: number): Entry | undefined => {
    const entry = entries.get(key);
    if (entry && entry.expiresAtMs <= nowMs) {
      entries.delete(key);
      return undefined;
    }
    return entry;
  };

  const sweep = (nowMs: number): void => {
    if (nowMs - lastSweepMs < SWEEP_INTERVAL_MS) return;
    lastSweepMs = nowMs;
    for (const [key, entry] of entries) if (entry.expiresAtMs <= nowMs) entries.delete(key);
  };

  return {
    hit(identity: string, rules: readonly RateLimitRule[]): Promise<Decision> {
      const nowMs = now();
      sweep(nowMs);
      const pending: Pending[] = rules.map((rule) => {
        const key = counterKey('', identity, rule);
        const entry = live(key, nowMs);
        return { key, rule, entry, state: algorithmOf(rule).decide(entry, rule, nowMs) };
      });
      if (pending.some((p) => p.state.retryAfterMs > 0)) {
        return Promise.resolve({ allowed: false, limits: pending.map((p) => p.state) });
      }
      const limits = pending.map((p) => {
        const { entry, state } = algorithmOf(p.rule).consume(p.entry, p.rule, nowMs);
        entries.set(p.key, entry);
        return state;
      });
      return Promise.resolve({ allowed: true, limits });
    },
  };
}

function algorithmOf(rule: RateLimitRule): Algorithm {
  const algorithm = ALGORITHMS[rule.algorithm];
  if (!algorithm) throw new Error(`The memory store does not implement ${rule.algorithm} yet`);
  return algorithm;
}
