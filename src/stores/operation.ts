import type { RateLimitRule } from '../rate-limit-rule';
import type { Decision, LimitState, TakeReceipt } from './store';

/*
 * The contract of a store's two calls for one GraphQL operation with secondary limits
 * (`budget.inFlight`, `budget.time`): one before it runs, which decides its cost budget, its
 * execution time and its in-flight slot together and takes all of them or none, and one after,
 * which settles them. A store that lacks them cannot serve those options (refused at
 * construction).
 */

/** A policy an operation is decided on, as `extensions.policy` and the headers name it. */
export type OperationPolicy = 'budget' | 'time' | 'inFlight';

/** What one operation asks of its identity's limits; the rules share the identity's hash tag. */
export interface OperationLimits {
  /** The cost budget's counter, with `units` (the estimate) to take; absent when it takes none. */
  readonly budget?: { readonly rule: RateLimitRule; readonly units: number } | undefined;
  /**
   * Execution time: `limit` ms per `windowSeconds`, `cost` the ms reserved at admission (the
   * counter is not an algorithm of {@link RateLimitRule}'s: it may fall into debt).
   */
  readonly time?: RateLimitRule | undefined;
  /** In-flight slots: a CONCURRENCY rule, `windowSeconds` its lease. */
  readonly inFlight?: RateLimitRule | undefined;
}

/** The policies of `limits` that are there, in the order a decision's `limits` follow. */
export function policiesOf(limits: OperationLimits): OperationPolicy[] {
  const policies: OperationPolicy[] = [];
  if (limits.budget) policies.push('budget');
  if (limits.time) policies.push('time');
  if (limits.inFlight) policies.push('inFlight');
  return policies;
}

/** What an admitted operation holds, for its settlement and its slot's renewal. */
export interface OperationTicket {
  /** Names its in-flight slot (a lease token). */
  readonly token: string;
  /** What its budget took, for the refund. */
  readonly receipt?: TakeReceipt | undefined;
}

/** The decision before an operation runs: one state per policy, in {@link policiesOf} order. */
export interface OperationAdmission extends Decision {
  /** Present when it was admitted. */
  readonly ticket?: OperationTicket | undefined;
}

/** What an operation that ran gives back and is charged. */
export interface OperationSettlement {
  /** Budget units refunded (the estimate less the actual cost). */
  readonly budgetUnits: number;
  /** Execution time to charge, in ms (its measured time, plus a penalty when it was cut short). */
  readonly timeMs: number;
}

/** The store calls of an operation with secondary limits. */
export interface OperationStore {
  /** Decides every policy of `limits` for `identity` and takes all of them, or none. */
  admitOperation(identity: string, limits: OperationLimits): Promise<OperationAdmission>;
  /**
   * Settles an admitted operation in one step: gives back `budgetUnits`, charges `timeMs` in
   * place of the reservation (debt allowed), releases the slot. Answers each policy's state once
   * settled (`retryAfterMs` 0), in {@link policiesOf} order.
   */
  settleOperation(
    identity: string,
    limits: OperationLimits,
    ticket: OperationTicket,
    settlement: OperationSettlement,
  ): Promise<LimitState[]>;
}
