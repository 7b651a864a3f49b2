import fc from 'fast-check';

import type { RateLimitRule } from '../../src';

/**
 * A reference model of the Guarantees in SPEC.md, checked against an observed schedule of hits.
 *
 * The store decides on its own clock (the Redis server's TIME, or Date.now in the memory
 * store), which the client cannot read. All the model assumes is that each hit was decided at
 * some instant between the moment the client sent it and the moment it got the answer. It
 * widens that interval by SLACK_MS on each side (whole-millisecond clocks and key expiry) and
 * then only reports what no assignment of decision times inside the intervals can explain.
 * So a correct store never fails it, and a store that lets one unit too many through, or
 * blocks a hit it owed, does as soon as the schedule pins the hits down tightly enough.
 */

/** One step of a schedule: `size` hits fired together, in one tick, `atMs` after the start. */
export interface Step {
  readonly atMs: number;
  readonly size: number;
}

/** A schedule for one limit: the limit it runs against and its steps, in time order. */
export interface Schedule {
  readonly limit: number;
  readonly plan: readonly Step[];
}

/** The last step fires at most this long after the first. */
export const TIME_BUDGET_MS = 2_300;
/** Hits per schedule, at most. */
export const MAX_HITS = 70;

/**
 * Schedules for hits of `cost` against a limit of 3, 6 or 7 (6 or 7 for cost 2) per 1 s window,
 * none of which divides a second into whole microseconds. A run opens with a burst above the
 * limit (a fresh limit is whole, so one unit too many shows there first), then single hits and
 * small bursts 0-80 ms apart, which keep every limit saturated across the window boundaries;
 * once, it pauses 150-700 ms (a partial refill) and bursts again.
 */
export function scheduleArb(cost: number): fc.Arbitrary<Schedule> {
  return fc
    .record({
      limit: cost === 1 ? fc.constantFrom(3, 6, 7) : fc.constantFrom(6, 7),
      opening: fc.integer({ min: 1, max: 3 }),
      steps: fc.array(
        fc.record({
          gap: fc.integer({ min: 0, max: 80 }),
          size: fc.constantFrom(1, 1, 1, 1, 1, 1, 2, 3),
        }),
        { minLength: 50, maxLength: 60 },
      ),
      pause: fc.record({
        at: fc.integer({ min: 5, max: 35 }),
        length: fc.integer({ min: 150, max: 700 }),
        burst: fc.integer({ min: 1, max: 3 }),
      }),
    })
    .map(({ limit, opening, steps, pause }) => {
      const plan: Step[] = [{ atMs: 0, size: limit + opening }];
      let at = 0;
      let hits = limit + opening;
      steps.forEach((step, i) => {
        const next =
          i === pause.at
            ? { atMs: at + pause.length, size: limit + pause.burst }
            : { atMs: at + step.gap, size: step.size };
        if (next.atMs > TIME_BUDGET_MS || hits + next.size > MAX_HITS) return;
        plan.push(next);
        at = next.atMs;
        hits += next.size;
      });
      return { limit, plan };
    });
}

/** One hit as the client saw it; times in milliseconds on one client clock. */
export interface ObservedHit {
  readonly sent: number;
  readonly received: number;
  readonly allowed: boolean;
}

/** Milliseconds added on each side of [sent, received]. */
export const SLACK_MS = 2;

/** Where a hit's decision lies for sure, and how many units it took if it passed. */
interface Span {
  readonly index: number;
  readonly lo: number;
  readonly hi: number;
  readonly units: number;
}

/** The violations of `rule`'s guarantee in `hits`; empty when some timing explains them all. */
export function violations(rule: RateLimitRule, hits: readonly ObservedHit[]): string[] {
  const spans = hits.map((h, index): Span => ({
    index,
    lo: h.sent - SLACK_MS,
    hi: h.received + SLACK_MS,
    units: h.allowed ? rule.cost : 0,
  }));
  const byLo = (a: Span, b: Span): number => a.lo - b.lo || a.hi - b.hi;
  const passes = spans.filter((_, i) => hits[i]?.allowed).sort(byLo);
  const blocked = spans.filter((_, i) => !hits[i]?.allowed).sort(byLo);
  const model = { windowMs: rule.windowSeconds * 1000, limit: rule.limit, cost: rule.cost };
  switch (rule.algorithm) {
    case 'SLIDING_WINDOW':
      return [...slidingSafety(model, passes), ...slidingLiveness(model, passes, blocked)];
    case 'TOKEN_BUCKET':
      return [...bucketSafety(model, passes), ...bucketLiveness(model, passes, blocked)];
    case 'FIXED_WINDOW':
      return fixedWindows(model, passes, blocked);
  }
}

interface Model {
  readonly windowMs: number;
  readonly limit: number;
  readonly cost: number;
}

const fmt = (s: Span): string => `#${s.index}@[${s.lo.toFixed(1)}, ${s.hi.toFixed(1)}]`;

/**
 * Any `limit + 1` units are at least a window apart in time. Units sorted by `lo`: units
 * i..i+limit were decided within [lo_i, max hi], so that interval must be a window long.
 */
function slidingSafety({ windowMs, limit }: Model, passes: readonly Span[]): string[] {
  const units = passes.flatMap((p) => Array.from({ length: p.units }, () => p));
  const found: string[] = [];
  for (let i = 0; i + limit < units.length; i++) {
    const group = units.slice(i, i + limit + 1);
    const first = units[i] as Span;
    const maxHi = Math.max(...group.map((u) => u.hi));
    if (maxHi - first.lo < windowMs) {
      found.push(
        `SLIDING_WINDOW: ${limit + 1} units within ${(maxHi - first.lo).toFixed(1)} ms < ` +
          `${windowMs} ms: ${[...new Set(group)].map(fmt).join(' ')}`,
      );
    }
  }
  return found;
}

/**
 * A hit is blocked only when at least `limit - cost + 1` units are live in its window: passes
 * decided in (t_b - window, t_b]. Counted generously: any pass that could lie there counts.
 */
function slidingLiveness(
  { windowMs, limit, cost }: Model,
  passes: readonly Span[],
  blocked: readonly Span[],
): string[] {
  const found: string[] = [];
  for (const b of blocked) {
    const live = passes.filter((p) => p.hi > b.lo - windowMs && p.lo <= b.hi);
    const units = live.reduce((n, p) => n + p.units, 0);
    if (units < limit - cost + 1) {
      found.push(
        `SLIDING_WINDOW: ${fmt(b)} blocked with at most ${units} units in its window ` +
          `(needs ${limit - cost + 1}): ${live.map(fmt).join(' ')}`,
      );
    }
  }
  return found;
}

/** Units per millisecond of refill. */
const rate = ({ windowMs, limit }: Model): number => limit / windowMs;

/**
 * Floating-point slack of the refill in the safety bound, in units. Liveness takes none: a bucket
 * that admits a whole limit at once is owed exactly `limit - cost` units before it may block.
 */
const BUCKET_EPSILON = 1e-3;

/**
 * A bucket of `limit` tokens refilled at limit/window: the units of the passes decided in any
 * [t_a, t_b] are at most limit + rate * (t_b - t_a). Passes sorted by `lo`: passes i..j were
 * decided within [lo_i, max hi].
 */
function bucketSafety(model: Model, passes: readonly Span[]): string[] {
  const found: string[] = [];
  for (let i = 0; i < passes.length; i++) {
    const first = passes[i] as Span;
    let units = 0;
    let maxHi = -Infinity;
    for (let j = i; j < passes.length; j++) {
      const p = passes[j] as Span;
      units += p.units;
      maxHi = Math.max(maxHi, p.hi);
      const bound = model.limit + rate(model) * (maxHi - first.lo) + BUCKET_EPSILON;
      if (units > bound) {
        found.push(
          `TOKEN_BUCKET: ${units} units within ${(maxHi - first.lo).toFixed(1)} ms, more than ` +
            `${bound.toFixed(3)}: ${passes
              .slice(i, j + 1)
              .map(fmt)
              .join(' ')}`,
        );
        break;
      }
    }
  }
  return found;
}

/**
 * GCRA blocks a hit of `cost` at t_b only if, for some earlier pass j, the units U of the passes
 * decided in [t_j, t_b) exceed limit - cost + rate * (t_b - t_j): the tokens taken since t_j
 * outran the refill by more than the bucket holds. Checked generously: U counts every pass that
 * could lie in [t_j, t_b], and t_b - t_j is taken at its least, max(0, lo_b - hi_j).
 */
function bucketLiveness(model: Model, passes: readonly Span[], blocked: readonly Span[]): string[] {
  const found: string[] = [];
  for (const b of blocked) {
    const explained = passes.some((j) => {
      if (j.lo > b.hi) return false;
      const units = passes
        .filter((p) => p.hi >= j.lo && p.lo <= b.hi)
        .reduce((n, p) => n + p.units, 0);
      const since = Math.max(0, b.lo - j.hi); // j was decided first
      return units > model.limit - model.cost + rate(model) * since;
    });
    if (!explained) {
      found.push(
        `TOKEN_BUCKET: ${fmt(b)} blocked although no run of earlier passes can have emptied ` +
          `the bucket below ${model.cost} tokens`,
      );
    }
  }
  return found;
}

/** One reconstructed fixed window: it opened at some T in [from, to] and holds `passes`. */
interface Window {
  readonly from: number;
  readonly to: number;
  readonly passes: readonly Span[];
}

/** A bound on the search; never reached by schedules of a few dozen hits. */
const SEARCH_BUDGET = 2_000_000;
/** Passes that may fall on either side of one window's end, beyond which the search gives up. */
const MAX_AMBIGUOUS = 16;

/**
 * FIXED_WINDOW: a window opens at the first pass while none is open, T, and holds every pass
 * decided in [T, T + window); at most `limit` units each. A hit is blocked only inside a window
 * whose earlier passes already hold more than `limit - cost` units (outside any window it
 * passes, as cost <= limit). Decision times are only known to lie in their intervals, so a pass
 * near a window's end may belong to it or open (or join) the next: this searches every way to
 * cut the passes into windows and reports a violation only if none explains the observation,
 * that is, every reading is resolved in the implementation's favour.
 */
function fixedWindows(model: Model, passes: readonly Span[], blocked: readonly Span[]): string[] {
  const { windowMs, limit, cost } = model;
  let nodes = 0;
  let closest: { windows: Window[]; problem: string } | undefined;

  /** The first blocked hit no window of `windows` explains, if any. */
  const unexplained = (windows: readonly Window[]): string | undefined => {
    for (const b of blocked) {
      const ok = windows.some((w) => {
        if (b.hi < w.from || b.lo >= w.to + windowMs) return false;
        const before = w.passes.filter((p) => p.lo <= b.hi).reduce((n, p) => n + p.units, 0);
        return before >= limit - cost + 1;
      });
      if (!ok) return `${fmt(b)} blocked outside any window that was full enough`;
    }
    return undefined;
  };

  /** Can `rest` (sorted by lo), decided at or after `after`, be cut into valid windows? */
  const search = (rest: readonly Span[], after: number, windows: Window[]): boolean => {
    if (++nodes > SEARCH_BUDGET) return true; // give up in the implementation's favour
    const first = rest[0];
    if (!first) {
      const problem = unexplained(windows);
      if (problem === undefined) return true;
      if (!closest || windows.length >= closest.windows.length) closest = { windows, problem };
      return false;
    }
    // T is the decision time of some pass, and no pass of the rest is earlier: T lies in
    // [lo of the first, least hi]. Relaxed (sound): T need not be exactly one pass's time.
    const from = Math.max(first.lo, after);
    const to = Math.min(...rest.map((p) => p.hi));
    if (from > to) return false;
    const inside: Span[] = [];
    const later: Span[] = [];
    const either: Span[] = [];
    for (const p of rest) {
      const canIn = p.lo < to + windowMs; // t_p < T + window for some T <= to
      const canLater = p.hi >= from + windowMs; // t_p >= T + window for some T >= from
      if (canIn && canLater) either.push(p);
      else if (canIn) inside.push(p);
      else later.push(p);
    }
    if (either.length > MAX_AMBIGUOUS) return true; // give up in the implementation's favour
    for (let mask = 0; mask < 1 << either.length; mask++) {
      const ins = [...inside, ...either.filter((_, k) => mask & (1 << k))];
      const outs = [...later, ...either.filter((_, k) => !(mask & (1 << k)))];
      if (ins.length === 0) continue; // the window opens at a pass
      const units = ins.reduce((n, p) => n + p.units, 0);
      if (units > limit) {
        if (!closest || windows.length >= closest.windows.length) {
          closest = {
            windows: [...windows, { from, to, passes: ins }],
            problem: `${units} units in one window`,
          };
        }
        continue;
      }
      // Each inside pass needs T > lo - window, each later one T <= hi - window.
      const lo = Math.max(from, ...ins.map((p) => p.lo - windowMs));
      const hi = Math.min(to, ...outs.map((p) => p.hi - windowMs));
      if (lo > hi) continue;
      outs.sort((a, b) => a.lo - b.lo || a.hi - b.hi);
      if (search(outs, lo + windowMs, [...windows, { from: lo, to: hi, passes: ins }])) return true;
    }
    return false;
  };

  if (search(passes, -Infinity, [])) return [];
  const detail = (closest?.windows ?? [])
    .map(
      (w) =>
        `[T in ${w.from.toFixed(1)}..${w.to.toFixed(1)}: ` +
        `${w.passes.reduce((n, p) => n + p.units, 0)} units ${w.passes.map(fmt).join(' ')}]`,
    )
    .join(' ');
  return [
    `FIXED_WINDOW: no cut of the passes into windows of ${windowMs} ms with at most ${limit} ` +
      `units each explains the schedule; e.g. ${closest?.problem ?? '?'}: ${detail}`,
  ];
}
