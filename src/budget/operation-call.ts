import type { Decider, Outcome } from '../decide/decider';
import type { DecisionEvent, Reporter } from '../decision-events';
import { decidedHit } from '../decide/decided-hit';
import { RateLimitedError } from '../errors';
import { RENEWALS_PER_LEASE } from '../decide/leases';
import type { RateLimitRule } from '../rate-limit-rule';
import { unref } from '../runtime';
import type { SecondaryConfig } from '../options/secondary-options';
import {
  policiesOf,
  type OperationAdmission,
  type OperationLimits,
  type OperationPolicy,
  type OperationTicket,
} from '../stores/store';
import type { LimitState, RateLimitStore } from '../stores/store';

/*
 * An operation's secondary limits (`budget.inFlight`, `budget.time`), decided with its cost
 * budget: one store call before it runs (all or nothing), one after it ended (the budget's
 * refund, its time charged in place of the reservation, its slot released). While it runs,
 * its slot's lease is renewed a few times per lease time, as a CONCURRENCY field's is, so that a
 * process that dies frees its slots within one lease.
 */

/** What an admitted operation holds until it is settled. */
export interface OperationHold {
  readonly identity: string;
  readonly limits: OperationLimits;
  readonly ticket: OperationTicket;
  /** The store that admitted it, which alone can settle it. */
  readonly store: RateLimitStore;
  /** `performance.now()` when execution was allowed to start. */
  readonly startedMs: number;
  /** Stops the renewals of its slot. */
  readonly stopRenewing: () => void;
}

/** `extensions.executionTime` of an operation with `budget.time`. */
export interface ExecutionTimeExtension {
  /** Milliseconds reserved when it was admitted. */
  readonly reservedMs: number;
  /** Milliseconds it was charged: its execution time, plus the penalty when it was aborted. */
  readonly chargedMs: number;
  readonly throttleStatus: {
    /** Milliseconds of execution time per window. */
    readonly maximumAvailable: number;
    /** Milliseconds left once it was settled (negative while in debt); null when unread. */
    readonly currentlyAvailable: number | null;
    /** Milliseconds that come back per second. */
    readonly restoreRate: number;
  };
}

/** What the admission decided: the hold, or the refusal, and the events to report. */
export interface Admitted {
  readonly hold?: OperationHold | undefined;
  readonly refusal?: RateLimitedError | undefined;
  /** The budget's event, when it has a part (for its refund's revision). */
  readonly budgetEvent?: DecisionEvent | undefined;
}

/** The operation calls of one directive's budget. */
export interface OperationCalls {
  /**
   * Admits the operation of `identity` (the budget's part: `units`, none when 0), reporting one
   * event per policy on `context`; rejects when no store decided.
   */
  admit(
    context: unknown,
    identity: string,
    budgetRule: RateLimitRule,
    units: number,
    dryRun: boolean,
  ): Promise<Admitted>;
  /**
   * Settles `hold`: `budgetUnits` refunded, its time charged (plus the penalty when
   * `aborted`). Answers each policy's state once settled, undefined when the store failed (its
   * slot then frees with its lease), and the time it was charged.
   */
  settle(
    hold: OperationHold,
    budgetUnits: number,
    aborted: boolean,
  ): Promise<{ states: LimitState[] | undefined; chargedMs: number }>;
  /** `extensions.executionTime`, when `budget.time` is on. */
  timeExtension(
    hold: OperationHold,
    chargedMs: number,
    states: LimitState[] | undefined,
  ): ExecutionTimeExtension | undefined;
}

/** The operation calls of a budget with `secondary` limits, through the directive's decider. */
export function operationCalls(
  secondary: SecondaryConfig,
  decider: Decider,
  report: Reporter,
): OperationCalls {
  const { inFlight, time, penaltyMs } = secondary;
  return {
    async admit(context, identity, budgetRule, units, dryRun) {
      const limits: OperationLimits = {
        budget: units > 0 ? { rule: budgetRule, units } : undefined,
        time,
        inFlight,
      };
      const policies = policiesOf(limits);
      const rules = policies.map((p) => ruleOf(p, limits) as RateLimitRule);
      const started = performance.now();
      // every admission sent, so that one whose answer came too late is undone when it comes
      const sent: [RateLimitStore, Promise<OperationAdmission>][] = [];
      let outcome: Outcome<OperationAdmission>;
      try {
        outcome = await decider.decide((on) => {
          if (!on.admitOperation) {
            return Promise.reject(new Error('The store cannot admit operations (admitOperation)'));
          }
          const admission = on.admitOperation(identity, limits);
          sent.push([on, admission]);
          return admission;
        });
      } catch (error) {
        for (const [on, admission] of sent) undoLate(on, admission, identity, limits);
        throw error;
      }
      // the store timed out and the fallback decided: the store's late admission is undone
      for (const [on, admission] of sent) {
        if (on !== outcome.store) undoLate(on, admission, identity, limits);
      }
      const latencyMs = performance.now() - started;
      const { decision } = outcome;
      // the policy that refused with the longest wait speaks for the refusal
      let refusing = decision.allowed ? -1 : 0;
      decision.limits.forEach((state, i) => {
        const best = decision.limits[refusing]?.retryAfterMs ?? 0;
        if (state.retryAfterMs > best) refusing = i;
      });
      let refusal: RateLimitedError | undefined;
      let budgetEvent: DecisionEvent | undefined;
      policies.forEach((policy, i) => {
        const rule = rules[i] as RateLimitRule;
        const cost = policy === 'budget' ? units : rule.cost;
        const subject = { field: rule.action, identity, rules: [rule], rule, cost };
        // each policy's own verdict: one that passed is reported as passed
        const own = {
          ...outcome,
          decision: {
            allowed: decision.allowed || (decision.limits[i]?.retryAfterMs ?? 0) === 0,
            limits: [decision.limits[i] as LimitState],
          },
        };
        const { event, refusal: refused } = decidedHit(subject, own, 0, latencyMs, dryRun);
        if (decision.allowed || i === refusing) report(context, event);
        if (policy === 'budget') budgetEvent = event;
        if (i === refusing && refused) {
          refusal = new RateLimitedError({ ...refused.details, policy });
        }
      });
      if (!decision.allowed) return { refusal, budgetEvent };
      const ticket = decision.ticket as OperationTicket;
      const { store } = outcome;
      const stopRenewing = inFlight
        ? renewing(store, decider, { token: ticket.token, identity, rules: [inFlight] })
        : () => undefined;
      const hold = { identity, limits, ticket, store, startedMs: performance.now(), stopRenewing };
      return { hold, budgetEvent };
    },

    async settle(hold, budgetUnits, aborted) {
      hold.stopRenewing();
      const tookMs = performance.now() - hold.startedMs;
      const chargedMs = tookMs + (aborted ? penaltyMs : 0);
      const { store, identity, limits, ticket } = hold;
      const settled = store.settleOperation?.(identity, limits, ticket, {
        budgetUnits,
        timeMs: chargedMs,
      });
      const states = settled ? await decider.bounded(settled).catch(() => undefined) : undefined;
      return { states, chargedMs };
    },

    timeExtension(hold, chargedMs, states) {
      if (!time) return undefined;
      const at = policiesOf(hold.limits).indexOf('time');
      return {
        reservedMs: time.cost,
        chargedMs: Math.round(chargedMs * 1000) / 1000,
        throttleStatus: {
          maximumAvailable: time.limit,
          currentlyAvailable: states?.[at]?.remaining ?? null,
          restoreRate: time.limit / time.windowSeconds,
        },
      };
    },
  };
}

/**
 * Undoes `admission` once it arrives, if it admitted: its caller was answered without it (the
 * store took too long), so what it took goes back at once (all of its points, its whole
 * reservation, its slot), not after a whole lease.
 */
function undoLate(
  on: RateLimitStore,
  admission: Promise<OperationAdmission>,
  identity: string,
  limits: OperationLimits,
): void {
  const units = limits.budget?.units ?? 0;
  admission.then(
    ({ allowed, ticket }) => {
      if (!allowed || !ticket || !on.settleOperation) return;
      const settlement = { budgetUnits: units, timeMs: 0 };
      on.settleOperation(identity, limits, ticket, settlement).catch(() => undefined);
    },
    () => undefined,
  );
}

/** The rule a decision's state of `policy` belongs to. */
function ruleOf(policy: OperationPolicy, limits: OperationLimits): RateLimitRule | undefined {
  if (policy === 'budget') return limits.budget?.rule;
  return policy === 'time' ? limits.time : limits.inFlight;
}

/** Renews the slot of `lease` a few times per lease time until the answered function is called. */
function renewing(
  store: RateLimitStore,
  decider: Decider,
  lease: { token: string; identity: string; rules: readonly RateLimitRule[] },
): () => void {
  const leaseMs = (lease.rules[0] as RateLimitRule).windowSeconds * 1000;
  const timer = setInterval(() => {
    const renewed = store.renew?.(lease);
    if (renewed) void decider.bounded(renewed).catch(() => undefined);
  }, leaseMs / RENEWALS_PER_LEASE);
  unref(timer);
  return () => clearInterval(timer);
}
