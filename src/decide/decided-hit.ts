import type { Outcome } from './decider';
import { storeFailure, type DecisionEvent, type EventSubject } from '../decision-events';
import {
  asError,
  RateLimitedError,
  RateLimitUnavailableError,
  type RefusalReason,
} from '../errors';
import type { StoreErrorPolicy } from '../options/directive-options';
import { isConcurrency } from '../rate-limit-rule';

/** A decided hit, as its caller reports and answers it. */
export interface DecidedHit {
  readonly event: DecisionEvent;
  /** What the caller gets instead of running: undefined when the hit passed, or in a dry run. */
  readonly refusal: RateLimitedError | undefined;
}

/** A hit that nothing decided, as its caller reports and answers it. */
export interface FailedHit {
  readonly event: DecisionEvent;
  /** What the caller gets instead of running: undefined when `onStoreError` is `'allow'`. */
  readonly refusal: RateLimitUnavailableError | undefined;
}

/**
 * The one answer to a hit or a take that neither the store nor the fallback decided (it failed
 * or ran past `timeoutMs`): the event that says so, and, unless `onStoreError` is `'allow'`,
 * the RATE_LIMIT_UNAVAILABLE error that answers it, with `caught` as its cause. A field's hit
 * and a budget's take fail the same way.
 */
export function failedHit(
  subject: EventSubject,
  onStoreError: StoreErrorPolicy,
  startedMs: number,
  caught: unknown,
): FailedHit {
  const error = asError(caught);
  const allowed = onStoreError === 'allow';
  const event = storeFailure(subject, allowed, startedMs, error);
  return { event, refusal: allowed ? undefined : new RateLimitUnavailableError(error) };
}

/**
 * The event of a hit that was decided (by the store, the block cache or the fallback), told by
 * the limit at `index` of the decision, which `subject.rule` is; and, when that hit was blocked
 * and `dryRun` is off, the RATE_LIMITED error that answers it. A field's hit and a budget's take
 * are reported and refused the same way, with the same `retryAfter`.
 */
export function decidedHit(
  subject: EventSubject,
  { decision, decidedBy, error }: Outcome,
  index: number,
  latencyMs: number,
  dryRun: boolean,
): DecidedHit {
  const { rule } = subject;
  const state = decision.limits[index];
  const reason: RefusalReason | undefined = decision.allowed
    ? undefined
    : isConcurrency(rule)
      ? 'CONCURRENCY'
      : 'RATE';
  // whole seconds, and at least 1 once blocked: a client told 0 would retry at once. A slot frees
  // when a call ends, which no clock foretells (the lease's expiry is only the latest it can be):
  // a CONCURRENCY refusal answers a short poll, 1 s
  const retryAfter = decision.allowed
    ? 0
    : reason === 'CONCURRENCY'
      ? 1
      : Math.max(1, Math.ceil((state?.retryAfterMs ?? 0) / 1000));
  // written out: spreading `subject` into this many properties costs V8 microseconds per hit
  const event: DecisionEvent = {
    field: subject.field,
    identity: subject.identity,
    rules: subject.rules,
    rule,
    cost: subject.cost ?? rule.cost,
    allowed: decision.allowed,
    remaining: state?.remaining,
    resetMs: state?.resetMs,
    retryAfter,
    latencyMs,
    decision,
    dryRun: dryRun && !decision.allowed,
    decidedBy,
    error,
    reason,
  };
  const refusal =
    decision.allowed || dryRun
      ? undefined
      : new RateLimitedError({
          action: rule.action,
          limit: rule.limit,
          window: rule.windowSeconds,
          retryAfter,
          ...(reason === 'CONCURRENCY' && { reason }),
        });
  return { event, refusal };
}
