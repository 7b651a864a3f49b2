import type { LimitState } from '../../src';

/*
 * Sound checks of a soak's decisions against each algorithm's guarantee: a correct
 * implementation never fails them, whatever the load did to latencies.
 *
 * Redis decides on its own clock: TIME, SET PX, PTTL and key expiry all read the wall clock.
 * The soak wraps the store and reads the same wall clock (Date.now()) right before each hit is
 * sent and right after its reply arrived, so the script ran somewhere in [before, after]. These
 * bounds are taken around the store call itself, not derived from `latencyMs` and a stamp taken
 * later in `onDecision`: a GC pause or a descheduled thread between those two would shift such
 * an interval past the moment the script ran. Every check reasons on [before, after], widened by
 * TOL_MS for whole-millisecond rounding (Date.now(), PTTL, the script's cached ms clock), and
 * reports a violation only when no placement of the decisions inside their intervals is
 * consistent with the guarantee.
 */

/** Slack for whole-millisecond rounding on either side of a decision's interval. */
export const TOL_MS = 3;

/** At most this many violations are spelled out per check. */
const MAX_REPORTED = 5;

/** One decision of one field for one identity, seen through one of the field's limits. */
export interface RuleHit {
  /** Earliest moment (wall clock, ms) the script can have run. */
  readonly lo: number;
  /** Latest moment it can have run. */
  readonly hi: number;
  /** The whole hit passed (every limit of the field allowed it and all were consumed). */
  readonly allowed: boolean;
  /** This limit would have blocked the hit (its retryAfterMs > 0). */
  readonly blocking: boolean;
  /** This limit's resetMs as the script reported it. */
  readonly resetMs: number;
  /** This limit's remaining units as the script reported it. */
  readonly remaining: number;
}

/** A limit as the checks need it. */
export interface Limit {
  readonly limit: number;
  readonly windowMs: number;
}

/** What one check found. */
export interface CheckResult {
  readonly violations: string[];
  /** How many passes and decisions it looked at. */
  readonly passes: number;
  readonly decisions: number;
  /** FIXED_WINDOW: windows seen, windows whose exact count was asserted, windows left uncertain. */
  readonly windows?: number;
  readonly exactWindows?: number;
  readonly uncertainWindows?: number;
  /** FIXED_WINDOW: decisions in a key's last millisecond that reported a whole window (below). */
  readonly lastMsDecisions?: number;
}

/** A decision, with wall-clock bounds on when the store call ran. */
export interface Stamped {
  /** Date.now() right before the hit was sent to the store. */
  readonly before: number;
  /** Date.now() right after its reply arrived. */
  readonly after: number;
  readonly allowed: boolean;
  readonly limits: readonly LimitState[];
}

/** The decisions of one field and identity, seen through the field's `index`-th limit. */
export function ruleHits(decisions: readonly Stamped[], index: number): RuleHit[] {
  return decisions.map((d) => {
    const state = d.limits[index];
    if (!state) throw new Error(`decision without state for limit ${index}`);
    return {
      lo: d.before - TOL_MS,
      hi: d.after + TOL_MS,
      allowed: d.allowed,
      blocking: state.retryAfterMs > 0,
      resetMs: state.resetMs,
      remaining: state.remaining,
    };
  });
}

const ms = (t: number, origin: number): string => `${(t - origin).toFixed(0)}ms`;

const show = (h: RuleHit, origin: number): string =>
  `${ms(h.lo, origin)}..${ms(h.hi, origin)}/${h.resetMs}/${h.remaining}`;

function push(violations: string[], text: string): boolean {
  if (violations.length < MAX_REPORTED) violations.push(text);
  else if (violations.length === MAX_REPORTED) violations.push('... more violations left out');
  return violations.length > MAX_REPORTED;
}

interface Ended {
  readonly hit: RuleHit;
  /** Bounds on the end of the window the hit saw: when its key expires (Redis ms clock). */
  readonly lo: number;
  readonly hi: number;
  /** The reported end cannot be trusted (see checkFixedWindow); lo..hi is then a hull. */
  readonly lastMs: boolean;
}

interface Window {
  /** Bounds on this window's end: every pass of it shares that one end. */
  lo: number;
  hi: number;
  readonly passes: RuleHit[];
  blocked: boolean;
}

/**
 * FIXED_WINDOW, limit L, window W, cost 1. A window opens at its first pass (T) and its key
 * expires at E = T + W; every decision reports resetMs = the key's PTTL, so each pass (and each
 * hit this limit blocked) carries the end of its own window: E in [lo + resetMs, hi + resetMs].
 * Ends of distinct windows lie at least W apart, so passes whose end intervals are narrower than
 * W/2 group into windows unambiguously (wider ones, from latencies near W/2, are set aside and
 * the windows they could belong to are not asserted exact). Asserts:
 * - every window holds at most L passes, and consecutive windows' ends lie >= W apart;
 * - a hit this limit blocked belongs to a window some pass opened, and that window holds
 *   exactly L passes (a block means it was full);
 * - `singleLimit` (the field has no other limit): a window holds exactly min(L, n) passes,
 *   n = the hits decided certainly inside (T, E), as none of those can be blocked otherwise.
 *
 * One edge of hit.lua is tolerated, not asserted: in a key's last millisecond GET still sees it
 * but PTTL answers 0, and `fixed.decide` (`if pttl > 0`) then reports a whole window as resetMs
 * (and as retryAfterMs when blocked). A decision of a window already open that reports exactly
 * W is therefore read as ending either about now or W from now (the same-millisecond case), and
 * is set aside like a wide one; `lastMsDecisions` counts them.
 */
export function checkFixedWindow(
  hits: readonly RuleHit[],
  { limit, windowMs }: Limit,
  label: string,
  singleLimit: boolean,
): CheckResult {
  const violations: string[] = [];
  const origin = hits[0]?.lo ?? 0;
  const ended = (hit: RuleHit): Ended => {
    const opener = hit.allowed && hit.remaining === limit - 1;
    if (hit.resetMs === windowMs && !opener) {
      return { hit, lo: hit.lo, hi: hit.hi + windowMs, lastMs: true };
    }
    return { hit, lo: hit.lo + hit.resetMs, hi: hit.hi + hit.resetMs, lastMs: false };
  };
  const narrow = (e: Ended): boolean => !e.lastMs && e.hi - e.lo < windowMs / 2;
  const passes = hits.filter((h) => h.allowed).map(ended);
  const blocks = hits.filter((h) => h.blocking && !h.allowed).map(ended);
  const lastMs = [...passes, ...blocks].filter((e) => e.lastMs).length;
  const wide = passes.filter((e) => !narrow(e));

  const windows: Window[] = [];
  for (const e of passes.filter(narrow).sort((a, b) => a.lo - b.lo)) {
    const last = windows[windows.length - 1];
    if (last && e.lo <= last.hi) {
      last.lo = Math.max(last.lo, e.lo);
      last.hi = Math.min(last.hi, e.hi);
      last.passes.push(e.hit);
    } else {
      windows.push({ lo: e.lo, hi: e.hi, passes: [e.hit], blocked: false });
    }
  }

  for (const b of blocks) {
    if (!narrow(b)) continue;
    const own = windows.find((w) => b.lo <= w.hi && b.hi >= w.lo);
    if (own) own.blocked = true;
    else if (!wide.some((p) => b.lo <= p.hi && b.hi >= p.lo)) {
      const at = ms(b.hit.lo, origin);
      const end = ms(b.lo, origin);
      if (push(violations, `${label}: blocked at ~${at} by a window ending ~${end} no pass opened`))
        break;
    }
  }

  let exact = 0;
  let uncertain = 0;
  windows.forEach((w, k) => {
    const count = w.passes.length;
    const where = `window ending in [${ms(w.lo, origin)}, ${ms(w.hi, origin)}]`;
    if (count > limit) {
      const at = w.passes.map((p) => ms(p.hi, origin)).join(' ');
      push(violations, `${label}: ${count} passes > limit ${limit} in the ${where}: ${at}`);
    }
    const next = windows[k + 1];
    if (next && next.hi - w.lo < windowMs) {
      push(
        violations,
        `${label}: the ${where} and the next one, ending by ${ms(next.hi, origin)}, overlap; ` +
          `passes (decided in lo..hi, resetMs, remaining): ` +
          [...w.passes, ...next.passes].map((p) => show(p, origin)).join(' '),
      );
    }
    if (wide.some((p) => p.lo <= w.hi && p.hi >= w.lo)) {
      uncertain++;
      return;
    }
    let asserted = false;
    if (w.blocked) {
      asserted = true;
      if (count !== limit) {
        push(
          violations,
          `${label}: a hit was blocked in the ${where}, which holds ${count} passes`,
        );
      }
    }
    if (singleLimit) {
      const inside = hits.filter((h) => h.lo > w.hi - windowMs && h.hi < w.lo).length;
      if (inside >= limit) asserted = true;
      if (count < Math.min(limit, inside)) {
        push(
          violations,
          `${label}: ${inside} hits decided inside the ${where}, but only ${count} passed`,
        );
      }
    }
    if (asserted) exact++;
  });

  return {
    violations,
    passes: passes.length,
    decisions: hits.length,
    windows: windows.length,
    exactWindows: exact,
    uncertainWindows: uncertain,
    lastMsDecisions: lastMs,
  };
}

/**
 * SLIDING_WINDOW, limit L, window W (cost 1): a unit counts while it is younger than W, so any
 * L + 1 passes span at least W. Asserts:
 * - no L + 1 passes certainly lie within less than W (their latest `hi` minus earliest `lo`);
 * - a hit this limit blocked had L passes that can lie in the W before it.
 */
export function checkSlidingWindow(
  hits: readonly RuleHit[],
  { limit, windowMs }: Limit,
  label: string,
): CheckResult {
  const violations: string[] = [];
  const origin = hits[0]?.lo ?? 0;
  const passes = hits.filter((h) => h.allowed).sort((a, b) => a.lo - b.lo);

  // The set with the narrowest certain span, for each earliest member i: the L later-starting
  // passes that end soonest. Passes starting W or more after i cannot make a span below W.
  for (let i = 0; i < passes.length; i++) {
    const first = passes[i] as RuleHit;
    const ends: number[] = [];
    for (let j = i + 1; j < passes.length; j++) {
      const p = passes[j] as RuleHit;
      if (p.lo - first.lo >= windowMs) break;
      ends.push(p.hi);
    }
    if (ends.length < limit) continue;
    ends.sort((a, b) => a - b);
    const span = Math.max(first.hi, ends[limit - 1] as number) - first.lo;
    if (span < windowMs) {
      const text =
        `${label}: ${limit + 1} passes within ${span.toFixed(0)}ms < ${windowMs}ms, ` +
        `from ~${ms(first.lo, origin)}`;
      if (push(violations, text)) break;
    }
  }

  for (const b of hits) {
    if (!b.blocking || b.allowed) continue;
    const before = passes.filter((p) => p.hi > b.lo - windowMs && p.lo < b.hi).length;
    if (before < limit) {
      const text =
        `${label}: blocked at ~${ms(b.lo, origin)} with only ${before} passes ` +
        `possible in the ${windowMs}ms before`;
      if (push(violations, text)) break;
    }
  }
  return { violations, passes: passes.length, decisions: hits.length };
}

/**
 * TOKEN_BUCKET, L tokens refilled at r = L / W per ms (GCRA, cost 1). Asserts:
 * - passes certainly inside any [a, b] number at most L + r (b - a) + `slack`. GCRA needs no
 *   slack: each pass pushes the theoretical arrival time (TAT) at least one interval
 *   I = W / L past the first pass's time t_1, and pass n needs TAT + I - t_n <= W, so
 *   t_1 + n I - t_n <= W, that is n <= L + r (t_n - t_1). The default slack of 0.1 token only
 *   covers the key expiring up to 1 ms before its TAT (PX is rounded to whole ms); a slack of 1
 *   would let a bucket that holds L + 1 tokens through;
 * - a hit this limit blocked had an empty bucket: for some pass i before it, the passes from i
 *   on number more than L - 1 + r (t_b - t_i) (unrolling GCRA's theoretical arrival time),
 *   counted generously and with t_b - t_i taken as short as the intervals allow.
 */
export function checkTokenBucket(
  hits: readonly RuleHit[],
  { limit, windowMs }: Limit,
  label: string,
  slack = 0.1,
): CheckResult {
  const violations: string[] = [];
  const origin = hits[0]?.lo ?? 0;
  const rate = limit / windowMs;
  const passes = hits.filter((h) => h.allowed).sort((a, b) => a.lo - b.lo);

  outer: for (let i = 0; i < passes.length; i++) {
    const a = (passes[i] as RuleHit).lo;
    const ends = passes
      .slice(i)
      .map((p) => p.hi)
      .sort((x, y) => x - y);
    for (let k = 1; k <= ends.length; k++) {
      const b = ends[k - 1] as number;
      const bound = limit + rate * (b - a) + slack;
      if (k > bound) {
        const text =
          `${label}: ${k} passes within [${ms(a, origin)}, ${ms(b, origin)}] ` +
          `> ${bound.toFixed(2)} = limit + rate * length`;
        if (push(violations, text)) break outer;
        break;
      }
    }
  }

  for (const b of hits) {
    if (!b.blocking || b.allowed) continue;
    const earlier = passes.filter((p) => p.lo <= b.hi);
    const justified = earlier.some((first) => {
      const count = earlier.filter((p) => p.hi >= first.lo).length;
      return count > limit - 1 + rate * Math.max(0, b.lo - first.hi) - 1e-6;
    });
    if (!justified) {
      const text = `${label}: blocked at ~${ms(b.lo, origin)} with tokens left for all we know`;
      if (push(violations, text)) break;
    }
  }
  return { violations, passes: passes.length, decisions: hits.length };
}
