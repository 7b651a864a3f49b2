import type { RateLimitRule } from './rate-limit-rule';
import type { RefusalReason } from './errors';
import type { Decision, LimitState } from './stores/store';
import { warn, WARNING_CODES } from './warnings';

/**
 * What decided a hit: the store; this process's cache of blocks the store gave (`blockCache`);
 * or the `fallbackStore`, because the store failed or timed out.
 */
export type DecidedBy = 'store' | 'cache' | 'fallback';

/**
 * What happened to one hit on a rate-limited field, or to one operation's take from its cost
 * budget; given to `onDecision`.
 */
export interface DecisionEvent {
  /** The field, as `Type.field`; `'budget'` (no dot) for an operation's take from its budget. */
  readonly field: string;
  readonly identity: string;
  /** Every limit of the field, in directive order. */
  readonly rules: readonly RateLimitRule[];
  /** The limit the event speaks of: the one that blocked longest, else the one with least left. */
  readonly rule: RateLimitRule;
  /** Whether the resolver ran (with `onStoreError: 'allow'`, also after a store error). */
  readonly allowed: boolean;
  /** Units left on `rule` after this hit; undefined when the store failed. */
  readonly remaining: number | undefined;
  /** Milliseconds until `rule` is whole again; undefined when the store failed. */
  readonly resetMs: number | undefined;
  /** Whole seconds until the hit would pass; 0 when it passed; 1 (a poll hint) for CONCURRENCY. */
  readonly retryAfter: number;
  /** How long the store took to answer (or to fail), in milliseconds. */
  readonly latencyMs: number;
  /** The store's failure or timeout, when there was one (also when the fallback decided). */
  readonly error?: Error | undefined;
  /** What decided the hit; `'store'` also when it failed and nothing else decided. */
  readonly decidedBy: DecidedBy;
  /** Every limit's state, when the store answered. */
  readonly decision?: Decision | undefined;
  /** True when `dryRun` let a hit through that the limits blocked. */
  readonly dryRun?: boolean | undefined;
  /** Units the hit asked of `rule`; for the budget, the operation's estimate. @default rule.cost */
  readonly cost?: number | undefined;
  /**
   * Why a blocked hit was blocked (in a dry run too): `'CONCURRENCY'` when `rule` counts calls in
   * flight, `'RATE'` otherwise; undefined when the hit passed or nothing decided.
   */
  readonly reason?: RefusalReason | undefined;
}

/** Who and what an event speaks of, before anything was decided. */
export type EventSubject = Pick<DecisionEvent, 'field' | 'identity' | 'rules' | 'rule'> &
  Partial<Pick<DecisionEvent, 'cost'>>;

/** The event of a hit the store failed to decide (and no fallback decided): the policy answered. */
export function storeFailure(
  subject: EventSubject,
  allowed: boolean,
  startedMs: number,
  error: Error,
): DecisionEvent {
  return {
    ...subject,
    allowed,
    remaining: undefined,
    resetMs: undefined,
    retryAfter: 0,
    latencyMs: performance.now() - startedMs,
    error,
    decidedBy: 'store',
  };
}

/**
 * The limit a decision is reported by: when blocked, the one with the longest wait (waiting
 * that long satisfies every limit); when allowed, the one with the fewest units left.
 */
export function reportedLimit(decision: Decision): number {
  let best = 0;
  decision.limits.forEach((state, i) => {
    const current = decision.limits[best] as LimitState;
    const better = decision.allowed
      ? state.remaining < current.remaining
      : state.retryAfterMs > current.retryAfterMs;
    if (better) best = i;
  });
  return best;
}

/*
 * The decisions made while one request executes, keyed by its context object, so that a server
 * plugin can turn them into headers once the response is ready. A WeakMap: nothing is kept once
 * the request (and so its context) is gone.
 */
const byContext = new WeakMap<object, DecisionEvent[]>();

/**
 * Whether a server plugin of this library (Apollo's, envelop's) is in use, to read each
 * request's decisions: until one starts, none is kept (`transformer` alone needs none, and
 * keeping them cost about half a microsecond of every hit).
 */
let plugged = false;

/**
 * Called by a server plugin as it starts (Apollo Server starts its plugins before any request),
 * and by envelop's as an execution starts: decisions are kept from then.
 */
export function keepDecisions(): void {
  plugged = true;
}

/**
 * Remembers `event` for the request whose context is `context` (when it is an object), once a
 * server plugin is there to read it.
 */
export function recordDecision(context: unknown, event: DecisionEvent): void {
  if (!plugged || typeof context !== 'object' || context === null) return;
  const list = byContext.get(context);
  if (list) list.push(event);
  else byContext.set(context, [event]);
}

/**
 * Puts `revised` in the place of `event` among the decisions of `context`'s request: a budget's
 * take, once its operation ran and the unused points went back, reports what is left then.
 */
export function reviseDecision(
  context: unknown,
  event: DecisionEvent,
  revised: DecisionEvent,
): void {
  if (typeof context !== 'object' || context === null) return;
  const list = byContext.get(context);
  const at = list?.indexOf(event) ?? -1;
  if (list && at >= 0) list[at] = revised;
}

/** Every decision made for the request whose context is `context`, in order. */
export function decisionsOf(context: unknown): readonly DecisionEvent[] {
  if (typeof context !== 'object' || context === null) return [];
  return byContext.get(context) ?? [];
}

/** Records one event for its request and hands it to the `onDecision` hook. */
export type Reporter = (context: unknown, event: DecisionEvent) => void;

/**
 * A function that records each event for its request and hands it to `onDecision`. What the
 * hook throws is reported once per reporter as a process warning, so one directive's noisy
 * hook never silences another's.
 */
export function createReporter(onDecision: ((event: DecisionEvent) => void) | undefined): Reporter {
  let warned = false;
  return (context, event) => {
    recordDecision(context, event);
    if (!onDecision) return;
    try {
      onDecision(event);
    } catch (error) {
      if (!warned) {
        warned = true;
        warn(
          `rateLimitDirective: onDecision threw: ${String(error)}`,
          WARNING_CODES.ON_DECISION_THREW,
        );
      }
    }
  };
}
