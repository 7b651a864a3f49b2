import { asError, RateLimitConfigError } from '../../errors';
import { counterKey } from '../keys';
import { showValue } from '../../show-value';
import { randomUUID } from '../../runtime';

import { isConcurrency, type RateLimitRule } from '../../rate-limit-rule';
import { MEMORY_ALGORITHMS } from './algorithms';
import type { Entry } from './entry';
import { leaseSlots } from './leases';
import { spentAt, timeState, type SpentTime } from './execution-time';
import { receiptOf, refundEntry } from './refund';
import { hitError } from '../hit-checks';
import { claimRefund } from '../refund-claims';
import {
  identityAt,
  type ClosableStore,
  type Decision,
  type LimitState,
  type Refunded,
  type TakeDecision,
  type TakeReceipt,
} from '../store';

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
export function createMemoryStore(options: MemoryStoreOptions = {}): ClosableStore {
  const now = options.now ?? Date.now;
  const maxEntries = options.maxEntries ?? DEFAULTS.maxEntries;
  if (!Number.isSafeInteger(maxEntries) || maxEntries < 1) {
    throw new RateLimitConfigError(
      `createMemoryStore: maxEntries must be a whole number >= 1, got ${showValue(maxEntries)}`,
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

  /** Decides and counts one hit at `nowUs`; throws what `hit` rejects with. */
  const hitAt = (
    identity: string | readonly string[],
    rules: readonly RateLimitRule[],
    costs: readonly number[] | undefined,
    nowUs: number,
  ): Decision => {
    const misuse = hitError(identity, rules, costs);
    if (misuse) throw misuse;
    sweep(nowUs, SWEEP_PER_HIT);
    const keys = rules.map((rule, i) => counterKey('', identityAt(identity, i), rule));
    const found = keys.map((key) => live(key, nowUs));
    // the slots a hit takes on CONCURRENCY limits are named by a token of its own
    const token = rules.some(isConcurrency) ? randomUUID() : undefined;
    const pending = rules.map((rule, i) => {
      const cost = costs?.[i];
      const costed = cost === undefined || cost === rule.cost ? rule : { ...rule, cost };
      return MEMORY_ALGORITHMS[rule.algorithm](found[i], costed, nowUs, token);
    });
    if (pending.some((p) => p.state.retryAfterMs > 0)) {
      return { allowed: false, limits: pending.map((p) => p.state) };
    }
    const added = found.filter((entry) => entry === undefined).length;
    if (entries.size + added > maxEntries) {
      sweep(nowUs, RECLAIM_PER_HIT);
      if (entries.size + added > maxEntries) {
        throw new Error(
          `Memory store full: ${maxEntries} counters in use (maxEntries); a hit that needs ` +
            'a new counter is refused until some expire',
        );
      }
    }
    const limits = pending.map((p, i) => {
      const { entry, state } = p.commit();
      entries.set(keys[i] as string, entry);
      return state;
    });
    if (token === undefined) return { allowed: true, limits };
    return { allowed: true, limits, lease: { token, identity, rules, costs } };
  };

  /** Refunds `units` of the take of `receipt` at `atUs`: whether anything was. */
  const refundAt = (
    identity: string,
    rule: RateLimitRule,
    receipt: TakeReceipt,
    units: number,
    atUs: number,
  ): boolean => {
    const key = counterKey('', identity, rule);
    const entry = live(key, atUs);
    const outcome = entry ? refundEntry(entry, rule, receipt, units, atUs) : 'none';
    if (outcome === 'whole') entries.delete(key);
    return outcome !== 'none';
  };

  /** The state of `rule` for `identity` at `atUs`, counting nothing. */
  const stateAt = (identity: string, rule: RateLimitRule, atUs: number): LimitState => {
    const entry = live(counterKey('', identity, rule), atUs);
    const { remaining, resetMs } = MEMORY_ALGORITHMS[rule.algorithm](entry, rule, atUs).state;
    return { remaining, resetMs, retryAfterMs: 0 };
  };

  // whole microseconds, as Redis' TIME gives them: the bucket's arithmetic stays in integers
  const nowUs = (): number => Math.floor(now() * 1000);

  // execution time per identity (budget.time), beside the counters: it may fall into debt
  const times = new Map<string, SpentTime>();
  const timeKey = (identity: string, rule: RateLimitRule): string => counterKey('', identity, rule);
  const spendTime = (key: string, spentUs: number, atUs: number): void => {
    if (spentUs <= 0) times.delete(key);
    else times.set(key, { spentUs, atUs });
  };

  return {
    hit(identity, rules, costs): Promise<Decision> {
      try {
        return Promise.resolve(hitAt(identity, rules, costs, nowUs()));
      } catch (error) {
        return Promise.reject(asError(error));
      }
    },

    take(identity, rule, units): Promise<TakeDecision> {
      try {
        const at = nowUs();
        const decision = hitAt(identity, [rule], [units], at);
        if (!decision.allowed) return Promise.resolve(decision);
        const entry = entries.get(counterKey('', identity, rule)) as Entry;
        return Promise.resolve({ ...decision, receipt: receiptOf(rule, entry, units, at) });
      } catch (error) {
        return Promise.reject(asError(error));
      }
    },

    refund(identity, rule, receipt, units): Promise<boolean> {
      const misuse = claimRefund(identity, rule, receipt, units);
      if (misuse) return Promise.reject(misuse);
      return Promise.resolve(refundAt(identity, rule, receipt, units, nowUs()));
    },

    refundAndPeek(identity, rule, receipt, units): Promise<Refunded> {
      const misuse = claimRefund(identity, rule, receipt, units);
      if (misuse) return Promise.reject(misuse);
      const at = nowUs();
      const refunded = refundAt(identity, rule, receipt, units, at);
      return Promise.resolve({ refunded, state: stateAt(identity, rule, at) });
    },

    peek(identity, rules): Promise<LimitState[]> {
      const misuse = hitError(identity, rules);
      if (misuse) return Promise.reject(misuse);
      const at = nowUs();
      return Promise.resolve(rules.map((rule) => stateAt(identity, rule, at)));
    },

    reset(identity, rules): Promise<void> {
      const misuse = hitError(identity, rules);
      if (misuse) return Promise.reject(misuse);
      for (const rule of rules) entries.delete(counterKey('', identity, rule));
      return Promise.resolve();
    },

    admitOperation(identity, limits) {
      try {
        const at = nowUs();
        const { budget, time, inFlight } = limits;
        const rules: RateLimitRule[] = [];
        const costs: number[] = [];
        if (budget) {
          rules.push(budget.rule);
          costs.push(budget.units);
        }
        if (inFlight) {
          rules.push(inFlight);
          costs.push(1);
        }
        const key = time && timeKey(identity, time);
        const spent = time && key !== undefined ? spentAt(times.get(key), time, at) : 0;
        const timed = time && timeState(spent, time, time.cost);
        // in the order of policiesOf: budget, time, in flight
        const ordered = (states: readonly LimitState[], t: LimitState | undefined) => {
          const out = [...states];
          if (t) out.splice(budget ? 1 : 0, 0, t);
          return out;
        };
        if (timed && timed.retryAfterMs > 0) {
          // refused by its time: the others are decided as a peek would, and nothing is taken
          const states = rules.map((rule, i) => {
            const cost = costs[i] as number;
            const costed = cost === rule.cost ? rule : { ...rule, cost };
            const entry = live(counterKey('', identity, rule), at);
            return MEMORY_ALGORITHMS[rule.algorithm](entry, costed, at).state;
          });
          return Promise.resolve({ allowed: false, limits: ordered(states, timed) });
        }
        const decision = rules.length
          ? hitAt(identity, rules, costs, at)
          : { allowed: true, limits: [] };
        if (!decision.allowed) {
          return Promise.resolve({ allowed: false, limits: ordered(decision.limits, timed) });
        }
        if (time && key !== undefined && timed) {
          spendTime(key, spent + time.cost * 1000, at);
        }
        const taken = time && timed && timeState(spent + time.cost * 1000, time, 0);
        const receipt =
          budget &&
          receiptOf(
            budget.rule,
            entries.get(counterKey('', identity, budget.rule)) as Entry,
            budget.units,
            at,
          );
        const token = decision.lease?.token ?? randomUUID();
        return Promise.resolve({
          allowed: true,
          limits: ordered(decision.limits, taken),
          ticket: { token, receipt },
        });
      } catch (error) {
        return Promise.reject(asError(error));
      }
    },

    settleOperation(identity, limits, ticket, { budgetUnits, timeMs }) {
      const at = nowUs();
      const { budget, time, inFlight } = limits;
      const states: LimitState[] = [];
      if (budget) {
        const { rule, units } = budget;
        const back = Math.min(budgetUnits, units);
        if (ticket.receipt && back > 0) refundAt(identity, rule, ticket.receipt, back, at);
        states.push(stateAt(identity, rule, at));
      }
      if (time) {
        const key = timeKey(identity, time);
        const deltaUs = Math.round(timeMs * 1000) - time.cost * 1000;
        const spent = Math.max(0, spentAt(times.get(key), time, at) + deltaUs);
        spendTime(key, spent, at);
        states.push({ ...timeState(spent, time, 0), retryAfterMs: 0 });
      }
      if (inFlight) {
        leaseSlots(entries, { token: ticket.token, identity, rules: [inFlight] }, 'release', at);
        states.push(stateAt(identity, inFlight, at));
      }
      return Promise.resolve(states);
    },

    // the counters are plain memory: ready at once
    ready: () => Promise.resolve(),
    release(lease): Promise<void> {
      leaseSlots(entries, lease, 'release', nowUs());
      return Promise.resolve();
    },
    renew(lease): Promise<boolean> {
      const { slots, done } = leaseSlots(entries, lease, 'renew', nowUs());
      return Promise.resolve(slots === done);
    },
    // the counters are plain memory, and no timer runs: nothing to close
    close: () => Promise.resolve(),
  };
}
