import { BUDGET_ACTION } from '../options/budget-options';
import type { DecisionEvent } from '../decision-events';
import type { ResolvedPluginOptions } from '../options/plugin-options';

/** One action's state in `extensions.rateLimit`; `reset` in whole seconds. */
export interface LimitReport {
  readonly limit: number;
  readonly remaining: number;
  readonly reset: number;
}

/**
 * What a response says about the limits its operation hit. Decided here, once, so that every
 * server's plugin (Apollo, envelop/Yoga) reports the same thing; each only writes it.
 */
export interface ResponseReport {
  /**
   * Lower-case header names and values, in the form of the IETF httpapi rate-limit-headers
   * draft: `ratelimit-policy` and `ratelimit` from the most constrained limit (the operation's
   * cost budget is one, named `"budget"`), and `retry-after` (seconds) when a hit was blocked.
   */
  readonly headers: readonly (readonly [name: string, value: string])[];
  /**
   * How many more hits like this one the `ratelimit` header's limit allows: its units left over
   * the units this hit took (a budget's points over the operation's estimate), so that it
   * compares with a subgraph's `r` when headers are merged.
   */
  readonly hitsLeft: number;
  /** `extensions.rateLimit`, when `exposeLimits` asks for it. */
  readonly limits: Readonly<Record<string, LimitReport>> | undefined;
  /** Whether a hit was blocked (the hits a dry run only reported do not count). */
  readonly blocked: boolean;
}

/** The parts of an execution result that decide a 429. */
export interface ResultShape {
  readonly data?: Readonly<Record<string, unknown>> | null | undefined;
  readonly errors?:
    readonly { readonly extensions?: Record<string, unknown> | undefined }[] | undefined;
}

/**
 * The report of a response whose operation made `events`, or undefined when no hit reached a
 * decision (no limited field ran, or the store failed on every one): such a response carries
 * no rate-limit header.
 */
export function responseReport(
  events: readonly DecisionEvent[],
  options: ResolvedPluginOptions,
): ResponseReport | undefined {
  const decided = events.filter((e) => e.decision);
  if (decided.length === 0) return undefined;
  const blocked = decided.filter((e) => !e.allowed && !e.dryRun);
  // blocked: the longest wait satisfies every limit; allowed: the fewest hits like this one left,
  // so that a budget's points (an operation takes its estimate) compare with a field's units
  const hitsLeft = (e: DecisionEvent) =>
    Math.max(0, e.remaining ?? 0) / Math.max(1, e.cost ?? e.rule.cost);
  const headline = blocked.length
    ? maxBy(blocked, (e) => e.retryAfter)
    : maxBy(decided, (e) => -hitsLeft(e));
  const { rule } = headline;
  const policy = JSON.stringify(rule.action);
  const remaining = Math.max(0, headline.remaining ?? 0);
  const reset = Math.ceil((headline.resetMs ?? 0) / 1000);
  const headers: [string, string][] = [
    ['ratelimit-policy', `${policy};q=${rule.limit};w=${rule.windowSeconds}`],
    ['ratelimit', `${policy};r=${remaining};t=${reset}`],
  ];
  if (blocked.length) headers.push(['retry-after', String(headline.retryAfter)]);
  return {
    headers,
    hitsLeft: blocked.length ? 0 : Math.floor(hitsLeft(headline)),
    limits: options.exposeLimits ? limitsOf(decided) : undefined,
    blocked: blocked.length > 0,
  };
}

/**
 * Whether the response should be a 429: `status429` is on, a hit was blocked, and every root
 * field of the operation failed with RATE_LIMITED (a partial result stays a 200, so a client
 * still gets the fields that passed).
 */
export function answers429(
  report: ResponseReport,
  result: ResultShape,
  options: ResolvedPluginOptions,
): boolean {
  return options.status429 && report.blocked && everyRootFieldBlocked(result);
}

function everyRootFieldBlocked(result: ResultShape): boolean {
  const errors = result.errors ?? [];
  if (errors.length === 0 || errors.some((e) => e.extensions?.code !== 'RATE_LIMITED')) {
    return false;
  }
  return result.data == null || Object.values(result.data).every((v) => v === null);
}

function limitsOf(events: readonly DecisionEvent[]): Record<string, LimitReport> {
  // a Map, then own properties: an action named `__proto__` is a key like any other
  const state = new Map<string, LimitReport>();
  for (const event of events) {
    // the budget has `extensions.cost`, in Shopify's shape
    if (event.field === BUDGET_ACTION) continue;
    event.rules.forEach((r, i) => {
      const s = event.decision?.limits[i];
      if (s) {
        state.set(r.action, {
          limit: r.limit,
          remaining: s.remaining,
          reset: Math.ceil(s.resetMs / 1000),
        });
      }
    });
  }
  return Object.fromEntries(state);
}

function maxBy<T>(items: readonly T[], score: (item: T) => number): T {
  return items.reduce((best, item) => (score(item) > score(best) ? item : best));
}
