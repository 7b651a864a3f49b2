import type { LimitState, RateLimitAlgorithm, RateLimitRule } from '../../src';

/**
 * The reference model of the Guarantees in SPEC.md, checked against observed hits. The
 * schedule tests (short random schedules straight at `store.hit`) and the soak (a long run at
 * full speed through a server) both check their hits here.
 *
 * The store decides on its own clock, which the client cannot read. All the model assumes is
 * that each hit was decided at some instant between the moment the client sent it and the
 * moment it got the answer, both read on one client clock. It widens that interval by
 * SLACK_MS on each side and reports only what no placement of the decisions inside their
 * intervals can explain. So a correct store never fails it, and a store that lets one unit too
 * many through, or blocks a hit it owed, does as soon as the hits pin the decisions down
 * tightly enough. Every check counts units: a passing hit takes `cost` of them.
 */

/**
 * Milliseconds added on each side of [sent, received]: where time is read in whole
 * milliseconds, a decision can seem to fall up to this far outside its interval.
 * - 1 ms on the client: Date.now() (the soak's clock) floors, so `received` can read up to
 *   1 ms before the answer arrived. performance.now() (the schedules') does not round; one
 *   slack serves both.
 * - 1 ms in the store: Redis scripts decide on TIME in microseconds, but key expiry, PX,
 *   PEXPIRE and PTTL use the whole-millisecond time cached when the script started, and a key
 *   in its last millisecond reports 1 ms left. So a window ends, or a log or bucket key
 *   expires, up to 1 ms off the microsecond time, and an end derived from a reported resetMs
 *   is 1 ms off too. The memory store reads Date.now().
 * Tokens need no slack of their own: GCRA keeps the theoretical arrival time exactly (whole
 * microseconds plus a remainder in 1/limit us), so a bucket holds exactly `limit` tokens;
 * token counts are compared with FLOAT_EPSILON only because the model computes them in
 * floating point.
 */
export const SLACK_MS = 2;

/** Compares token counts computed in floating point. */
const FLOAT_EPSILON = 1e-6;

/** At most this many violations are spelled out per check. */
const MAX_REPORTED = 5;

/** A limit as the model sees it. */
export interface ModelLimit {
  readonly algorithm: RateLimitAlgorithm;
  readonly limit: number;
  readonly windowMs: number;
  /** Units each passing hit takes. */
  readonly cost: number;
}

/** The model's view of a directive's rule. */
export const modelOf = (rule: RateLimitRule): ModelLimit => ({
  algorithm: rule.algorithm,
  limit: rule.limit,
  windowMs: rule.windowSeconds * 1000,
  cost: rule.cost,
});

/** One hit as the client saw it; times in milliseconds on one client clock. */
export interface ObservedHit {
  readonly sent: number;
  readonly received: number;
  /** The whole hit passed: every limit of its field allowed it and took its units. */
  readonly allowed: boolean;
  /** This limit blocked the hit. @default !allowed (the field has this limit only) */
  readonly blocking?: boolean;
  /** This limit's state as the store reported it; the window-end check needs it. */
  readonly state?: LimitState;
}

/** A store decision, with the client's clock read right before the call and right after. */
export interface TimedDecision {
  readonly sent: number;
  readonly received: number;
  readonly allowed: boolean;
  readonly limits: readonly LimitState[];
}

/** The decisions of one field, as the field's `index`-th limit saw them. */
export function throughLimit(decisions: readonly TimedDecision[], index: number): ObservedHit[] {
  return decisions.map((d) => {
    const state = d.limits[index];
    if (!state) throw new Error(`decision without state for limit ${index}`);
    const { sent, received, allowed } = d;
    return { sent, received, allowed, blocking: state.retryAfterMs > 0, state };
  });
}

/** What one check found. */
export interface CheckResult {
  readonly violations: string[];
  /** How many passes and decisions it looked at. */
  readonly passes: number;
  readonly decisions: number;
  /** FIXED_WINDOW by reported ends: windows seen, asserted exact, left uncertain. */
  readonly windows?: number;
  readonly exactWindows?: number;
  readonly uncertainWindows?: number;
}

/** Options of {@link check}. */
export interface CheckOptions {
  /** Starts every violation. @default the algorithm */
  readonly label?: string;
  /**
   * FIXED_WINDOW: how the windows are found. 'search' tries every way to cut the passes into
   * windows from timing alone (schedules of a few dozen hits); 'reported-ends' groups the
   * passes by the window end each decision reported (`state.resetMs`), for long runs.
   * @default 'search'
   */
  readonly fixedWindows?: 'search' | 'reported-ends';
  /**
   * The field has no other limit, so every hit this limit did not block passed; lets
   * 'reported-ends' assert that windows under pressure were filled exactly. @default false
   */
  readonly singleLimit?: boolean;
}

/** Where a decision lies for sure, and how many units it took. */
interface Span {
  readonly index: number;
  readonly lo: number;
  readonly hi: number;
  readonly units: number;
  /** This limit blocked it. */
  readonly blocked: boolean;
  readonly state: LimitState | undefined;
}

/** The limit, its spans (passes and blocks sorted by lo) and where findings go. */
interface Run extends ModelLimit {
  readonly spans: readonly Span[];
  readonly passes: readonly Span[];
  readonly blocked: readonly Span[];
  /** Adds a violation; true once enough are spelled out. */
  readonly report: (text: string) => boolean;
  readonly fmt: (s: Span) => string;
  readonly ms: (t: number) => string;
}

/** The violations of `limit`'s guarantee in `hits`, and what the check looked at. */
export function check(
  limit: ModelLimit,
  hits: readonly ObservedHit[],
  options: CheckOptions = {},
): CheckResult {
  const spans = hits.map((h, index): Span => ({
    index,
    lo: h.sent - SLACK_MS,
    hi: h.received + SLACK_MS,
    units: h.allowed ? limit.cost : 0,
    blocked: !h.allowed && (h.blocking ?? true),
    state: h.state,
  }));
  const byLo = (a: Span, b: Span): number => a.lo - b.lo || a.hi - b.hi;
  const violations: string[] = [];
  const label = options.label ?? limit.algorithm;
  const origin = Math.min(...spans.map((s) => s.lo));
  const ms = (t: number): string => `${(t - origin).toFixed(1)}ms`;
  const run: Run = {
    ...limit,
    spans,
    passes: spans.filter((s) => s.units > 0).sort(byLo),
    blocked: spans.filter((s) => s.blocked).sort(byLo),
    report: (text) => {
      if (violations.length < MAX_REPORTED) violations.push(`${label}: ${text}`);
      else if (violations.length === MAX_REPORTED) violations.push('... more left out');
      return violations.length > MAX_REPORTED;
    },
    fmt: (s) => `#${s.index}@[${ms(s.lo)}, ${ms(s.hi)}]`,
    ms,
  };
  const counted = { violations, passes: run.passes.length, decisions: hits.length };
  switch (limit.algorithm) {
    case 'SLIDING_WINDOW':
      slidingSafety(run);
      slidingLiveness(run);
      return counted;
    case 'TOKEN_BUCKET':
      bucketSafety(run);
      bucketLiveness(run);
      return counted;
    case 'FIXED_WINDOW':
      if (options.fixedWindows === 'reported-ends') {
        return { ...counted, ...fixedWindowEnds(run, options.singleLimit ?? false) };
      }
      fixedWindowSearch(run);
      return counted;
    case 'CONCURRENCY':
      // slots are held by calls, not hits over time: test/concurrency counts running calls
      throw new Error('the model checks hits over time; CONCURRENCY is checked by its calls');
  }
}

/** The violations of `rule`'s guarantee in the hits of a field with that rule alone. */
export function violations(rule: RateLimitRule, hits: readonly ObservedHit[]): string[] {
  return check(modelOf(rule), hits).violations;
}

const unitsOf = (spans: readonly Span[]): number => spans.reduce((n, s) => n + s.units, 0);

/**
 * SLIDING_WINDOW: any `limit + 1` units are at least a window apart. For each unit, the
 * narrowest set it can start: the `limit` units starting no earlier that end soonest; their
 * latest `hi` minus its `lo` must be a window long.
 */
function slidingSafety(run: Run): void {
  const { windowMs, limit } = run;
  const units = run.passes.flatMap((p) => Array.from({ length: p.units }, () => p));
  units.forEach((first, i) => {
    const later: Span[] = [];
    for (const u of units.slice(i + 1)) {
      if (u.lo - first.lo >= windowMs) break;
      later.push(u);
    }
    if (later.length < limit) return;
    const group = later.sort((a, b) => a.hi - b.hi).slice(0, limit);
    const span = Math.max(first.hi, ...group.map((u) => u.hi)) - first.lo;
    if (span < windowMs) {
      const who = [...new Set([first, ...group])].map(run.fmt).join(' ');
      run.report(`${limit + 1} units within ${span.toFixed(1)} ms < ${windowMs} ms: ${who}`);
    }
  });
}

/**
 * SLIDING_WINDOW: a hit is blocked only when more than `limit - cost` units are live in its
 * window: passes decided in (t_b - window, t_b]. Counted generously: any pass that could lie
 * there counts.
 */
function slidingLiveness(run: Run): void {
  const { windowMs, limit, cost } = run;
  for (const b of run.blocked) {
    const live = run.passes.filter((p) => p.hi > b.lo - windowMs && p.lo <= b.hi);
    const units = unitsOf(live);
    if (units < limit - cost + 1) {
      const text =
        `${run.fmt(b)} blocked with at most ${units} units in its window ` +
        `(needs ${limit - cost + 1}): ${live.map(run.fmt).join(' ')}`;
      if (run.report(text)) return;
    }
  }
}

/** Units per millisecond of refill. */
const rate = ({ windowMs, limit }: ModelLimit): number => limit / windowMs;

/**
 * TOKEN_BUCKET: the units of the passes decided in any [a, b] are at most
 * limit + rate * (b - a). GCRA needs no more: each pass pushes the theoretical arrival time
 * (TAT) its units' emission intervals I = window / limit past the first pass's time t_1, and
 * pass n needs TAT - t_n <= window, so t_1 + U I - t_n <= window, that is U <= limit +
 * rate (t_n - t_1). For each pass (by lo) as the first, the passes after it by end.
 */
function bucketSafety(run: Run): void {
  const { passes, limit } = run;
  for (let i = 0; i < passes.length; i++) {
    const a = (passes[i] as Span).lo;
    const byEnd = passes.slice(i).sort((x, y) => x.hi - y.hi);
    let units = 0;
    for (const [k, p] of byEnd.entries()) {
      units += p.units;
      const bound = limit + rate(run) * (p.hi - a) + FLOAT_EPSILON;
      if (units > bound) {
        const text =
          `${units} units within [${run.ms(a)}, ${run.ms(p.hi)}], more than ` +
          `${bound.toFixed(3)} = limit + rate * length: ${byEnd
            .slice(0, k + 1)
            .map(run.fmt)
            .join(' ')}`;
        if (run.report(text)) return;
        break;
      }
    }
  }
}

/**
 * TOKEN_BUCKET: GCRA blocks a hit of `cost` at t_b only if, for some earlier pass j, the units
 * U of the passes decided in [t_j, t_b) exceed limit - cost + rate * (t_b - t_j): the tokens
 * taken since t_j outran the refill by more than the bucket holds. Checked generously: U
 * counts every pass that could lie in [t_j, t_b], and t_b - t_j is taken at its least,
 * max(0, lo_b - hi_j).
 */
function bucketLiveness(run: Run): void {
  const { passes, limit, cost } = run;
  for (const b of run.blocked) {
    const explained = passes.some((j) => {
      if (j.lo > b.hi) return false;
      const units = unitsOf(passes.filter((p) => p.hi >= j.lo && p.lo <= b.hi));
      const since = Math.max(0, b.lo - j.hi);
      return units > limit - cost + rate(run) * since - FLOAT_EPSILON;
    });
    if (!explained) {
      const text =
        `${run.fmt(b)} blocked although no run of earlier passes can have emptied ` +
        `the bucket below ${cost} tokens`;
      if (run.report(text)) return;
    }
  }
}

/** One reconstructed fixed window: it opened at some T in [from, to] and holds `passes`. */
interface SearchWindow {
  readonly from: number;
  readonly to: number;
  readonly passes: readonly Span[];
}

/** A bound on the search; never reached by schedules of a few dozen hits. */
const SEARCH_BUDGET = 2_000_000;
/** Passes that may fall on either side of one window's end, beyond which the search gives up. */
const MAX_AMBIGUOUS = 16;

/**
 * FIXED_WINDOW from timing alone: a window opens at the first pass while none is open, T, and
 * holds every pass decided in [T, T + window); at most `limit` units each. A hit is blocked
 * only inside a window whose earlier passes already hold more than `limit - cost` units
 * (outside any window it passes, as cost <= limit). Decision times are only known to lie in
 * their intervals, so a pass near a window's end may belong to it or open (or join) the next:
 * this searches every way to cut the passes into windows and reports a violation only if none
 * explains the observation, that is, every reading is resolved in the implementation's favour.
 */
function fixedWindowSearch(run: Run): void {
  const { windowMs, limit, cost, blocked } = run;
  let nodes = 0;
  let closest: { windows: SearchWindow[]; problem: string } | undefined;
  const keep = (windows: SearchWindow[], problem: string): void => {
    if (!closest || windows.length >= closest.windows.length) closest = { windows, problem };
  };

  /** The first blocked hit no window of `windows` explains, if any. */
  const unexplained = (windows: readonly SearchWindow[]): string | undefined => {
    for (const b of blocked) {
      const ok = windows.some((w) => {
        if (b.hi < w.from || b.lo >= w.to + windowMs) return false;
        return unitsOf(w.passes.filter((p) => p.lo <= b.hi)) >= limit - cost + 1;
      });
      if (!ok) return `${run.fmt(b)} blocked outside any window that was full enough`;
    }
    return undefined;
  };

  /** Can `rest` (sorted by lo), decided at or after `after`, be cut into valid windows? */
  const search = (rest: readonly Span[], after: number, windows: SearchWindow[]): boolean => {
    if (++nodes > SEARCH_BUDGET) return true; // give up in the implementation's favour
    const first = rest[0];
    if (!first) {
      const problem = unexplained(windows);
      if (problem === undefined) return true;
      keep(windows, problem);
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
      const units = unitsOf(ins);
      if (units > limit) {
        keep([...windows, { from, to, passes: ins }], `${units} units in one window`);
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

  if (search(run.passes, -Infinity, [])) return;
  const detail = (closest?.windows ?? [])
    .map(
      (w) =>
        `[T in ${run.ms(w.from)}..${run.ms(w.to)}: ` +
        `${unitsOf(w.passes)} units ${w.passes.map(run.fmt).join(' ')}]`,
    )
    .join(' ');
  run.report(
    `no cut of the passes into windows of ${windowMs} ms with at most ${limit} units each ` +
      `explains the hits; e.g. ${closest?.problem ?? '?'}: ${detail}`,
  );
}

/** A window found by its end: every pass of it reported the same end, within these bounds. */
interface EndWindow {
  lo: number;
  hi: number;
  readonly passes: Span[];
  blocked: boolean;
}

/**
 * FIXED_WINDOW from the ends the store reported. A window opens at its first pass (T) and its
 * key expires at E = T + window; every decision reports resetMs, the time left until E, so
 * each pass (and each hit this limit blocked) carries the end of its own window:
 * E in [lo + resetMs, hi + resetMs]. Ends of distinct windows lie more than a window apart, so
 * passes whose end intervals are narrower than half a window group into windows unambiguously
 * (wider ones, from latencies near half a window, are set aside, and the windows they could
 * belong to are not asserted exact). Asserts:
 * - every window holds at most `limit` units, and consecutive windows' ends lie a window apart;
 * - a hit this limit blocked belongs to a window some pass opened, holding more than
 *   `limit - cost` units;
 * - `singleLimit`: a window holds at least min(n * cost, limit - cost + 1) units, n = the hits
 *   decided certainly inside (T, E): if none of them was blocked all passed, and one that was
 *   found more than `limit - cost` units there.
 */
function fixedWindowEnds(
  run: Run,
  singleLimit: boolean,
): Pick<CheckResult, 'windows' | 'exactWindows' | 'uncertainWindows'> {
  const { windowMs, limit, cost, ms } = run;
  const end = (s: Span): { span: Span; lo: number; hi: number } => {
    const resetMs = s.state?.resetMs;
    if (resetMs === undefined) throw new Error(`${run.fmt(s)} has no reported state`);
    return { span: s, lo: s.lo + resetMs, hi: s.hi + resetMs };
  };
  const narrow = (e: { lo: number; hi: number }): boolean => e.hi - e.lo < windowMs / 2;
  const passes = run.passes.map(end);
  const wide = passes.filter((e) => !narrow(e));

  const windows: EndWindow[] = [];
  for (const e of passes.filter(narrow).sort((a, b) => a.lo - b.lo)) {
    const last = windows[windows.length - 1];
    if (last && e.lo <= last.hi) {
      last.lo = Math.max(last.lo, e.lo);
      last.hi = Math.min(last.hi, e.hi);
      last.passes.push(e.span);
    } else {
      windows.push({ lo: e.lo, hi: e.hi, passes: [e.span], blocked: false });
    }
  }

  for (const b of run.blocked.map(end).filter(narrow)) {
    const own = windows.find((w) => b.lo <= w.hi && b.hi >= w.lo);
    if (own) own.blocked = true;
    else if (!wide.some((p) => b.lo <= p.hi && b.hi >= p.lo)) {
      const text = `${run.fmt(b.span)} blocked by a window ending ~${ms(b.lo)} no pass opened`;
      if (run.report(text)) break;
    }
  }

  let exact = 0;
  let uncertain = 0;
  windows.forEach((w, k) => {
    const units = unitsOf(w.passes);
    const where = `window ending in [${ms(w.lo)}, ${ms(w.hi)}]`;
    if (units > limit) {
      run.report(
        `${units} units > limit ${limit} in the ${where}: ${w.passes.map(run.fmt).join(' ')}`,
      );
    }
    const next = windows[k + 1];
    if (next && next.hi - w.lo < windowMs) {
      const both = [...w.passes, ...next.passes].map(run.fmt).join(' ');
      run.report(`the ${where} and the next one, ending by ${ms(next.hi)}, overlap: ${both}`);
    }
    if (wide.some((p) => p.lo <= w.hi && p.hi >= w.lo)) {
      uncertain++;
      return;
    }
    let asserted = false;
    if (w.blocked) {
      asserted = true;
      if (units < limit - cost + 1) {
        run.report(`a hit was blocked in the ${where}, which holds ${units} units`);
      }
    }
    if (singleLimit) {
      const inside = run.spans.filter((h) => h.lo > w.hi - windowMs && h.hi < w.lo).length;
      const owed = Math.min(inside * cost, limit - cost + 1);
      if (inside * cost >= limit - cost + 1) asserted = true;
      if (units < owed) {
        run.report(`${inside} hits decided inside the ${where}, but only ${units} units passed`);
      }
    }
    if (asserted) exact++;
  });
  return { windows: windows.length, exactWindows: exact, uncertainWindows: uncertain };
}
