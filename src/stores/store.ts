import type { RateLimitRule } from '../rate-limit-rule';

/*
 * The contract of a store, all that a custom store's author needs (and how to read the identity
 * `hit` is given). The checks the library's own
 * stores make of their input live in hit-checks.ts, the bookkeeping of refunds in
 * refund-claims.ts.
 */

/** The state of one limit after a hit was decided. */
export interface LimitState {
  /** Units left after this hit (before it, when the hit was blocked); for CONCURRENCY, slots free. */
  readonly remaining: number;
  /**
   * Milliseconds until the limit is whole again; for CONCURRENCY, until the oldest lease held
   * expires (0 when no slot is held): a slot frees then at the latest.
   */
  readonly resetMs: number;
  /** Milliseconds until a hit of this cost would pass this limit; 0 when it passes now. */
  readonly retryAfterMs: number;
}

/** The outcome of one hit against every limit of a field, decided atomically. */
export interface Decision {
  /** True when every limit allowed the hit and all of them were consumed. */
  readonly allowed: boolean;
  /** One state per rule, in the order the rules were given. */
  readonly limits: readonly LimitState[];
  /** True when the store answered from its cache of blocks, without asking its backend. */
  readonly cached?: boolean | undefined;
  /**
   * The slots an allowed hit holds on its CONCURRENCY limits, until `release` (or the lease
   * time, unless `renew`ed): present only when the hit passed and had such a limit.
   */
  readonly lease?: Lease | undefined;
}

/**
 * The slots one call holds on its CONCURRENCY limits: the hit that took them, named by a token
 * unique to it. Opaque outside the store that gave it, which alone can release or renew it.
 */
export interface Lease {
  readonly token: string;
  readonly identity: string | readonly string[];
  /** The hit's rules; the store holds slots of those that are CONCURRENCY. */
  readonly rules: readonly RateLimitRule[];
  /** Slots taken per rule. @default each rule's cost */
  readonly costs?: readonly number[] | undefined;
}

/** Names exactly what one `take` took, for `refund`; opaque outside the store that gave it. */
export interface TakeReceipt {
  /** Units the take took. */
  readonly units: number;
  /** Where the store finds them again: a window's end, the log entries, the time of the take. */
  readonly mark: readonly [string, string];
}

/** A decision of `take`: when it passed, with the receipt that `refund` needs. */
export interface TakeDecision extends Decision {
  readonly receipt?: TakeReceipt | undefined;
}

/**
 * Where counters live. `hit` decides all `rules` as one step: the hit passes only if every rule
 * allows it, and then consumes all of them; otherwise none.
 */
export interface RateLimitStore {
  /**
   * @param identity who the hit counts against: one identity for every rule, or one per rule
   *   (in rule order) when the field's limits count against several sources
   * @param costs units the hit takes of each rule, in rule order. @default each rule's `cost`
   */
  hit(
    identity: string | readonly string[],
    rules: readonly RateLimitRule[],
    costs?: readonly number[],
  ): Promise<Decision>;
  /** The state of each of `rules` for `identity`, counting nothing. */
  peek?(identity: string, rules: readonly RateLimitRule[]): Promise<LimitState[]>;
  /** Makes each of `rules` whole again for `identity`. */
  reset?(identity: string, rules: readonly RateLimitRule[]): Promise<void>;
  /**
   * `hit(identity, [rule], [units])`, also answering, when it passes, a receipt for `refund`: how
   * an operation's cost budget takes its estimate. Without it, the budget calls `hit` and gives
   * nothing back.
   */
  take?(identity: string, rule: RateLimitRule, units: number): Promise<TakeDecision>;
  /**
   * Gives `units` of what the `take` of `receipt` took back to `rule` for `identity`, where
   * they still count: never more than it took, never to a window, log or bucket it did not take
   * from (a bucket's tokens: no more than the take still owes once the time since is counted).
   * Each take is refunded once. Resolves to whether anything was refunded.
   */
  refund?(
    identity: string,
    rule: RateLimitRule,
    receipt: TakeReceipt,
    units: number,
  ): Promise<boolean>;
  /**
   * `refund`, then `peek` of `rule`, as one step: how a budget reports itself as the refund
   * left it (other operations' takes, a reset, a new window included) without another call.
   * Without it, the budget calls `refund` and then `peek`.
   */
  refundAndPeek?(
    identity: string,
    rule: RateLimitRule,
    receipt: TakeReceipt,
    units: number,
  ): Promise<Refunded>;
  /**
   * Resolves once the store can decide: for a Redis store, its connection is open, every
   * server's version read and its Lua loaded (on every master of a Cluster). The store sets
   * itself up when it is made and again after a reconnection, never inside a hit's deadline;
   * awaiting this before serving keeps set-up out of the first hits' `timeoutMs`. It waits for
   * as long as Redis is unreachable (race it against a timer to give up). Optional for a custom
   * store: without it, a store is taken as ready.
   */
  ready?(): Promise<void>;
  /**
   * While the store sets itself up (just made, or connected anew) and may still finish within
   * its allowance: a promise that resolves, never rejects, once the set-up is done or the
   * store stops waiting for it. Otherwise undefined. The directive asks it before each call and
   * starts the call's `timeoutMs` only once it resolved, so that set-up is never spent from a
   * hit's deadline. Optional for a custom store: without it, no call waits.
   */
  settingUp?(): Promise<void> | undefined;
  /**
   * Frees the slots of `lease` (a hit's, whose call has ended) at once; slots already gone
   * (expired, reset) are left as they are. Required of a store that decides CONCURRENCY limits.
   */
  release?(lease: Lease): Promise<void>;
  /**
   * Extends the slots of `lease` to a whole lease time from now, while its call still runs.
   * Never brings back a slot whose lease expired or was released or reset. Resolves to whether
   * every slot was still held.
   */
  renew?(lease: Lease): Promise<boolean>;
  /**
   * Closes what the store opened (a Redis store's own connection), never what it was given (the
   * client it was made from). Hits fail once it is called. Optional for a custom store.
   */
  close?(): Promise<void>;
  /**
   * An operation's call before it runs, with secondary limits (`budget.inFlight`,
   * `budget.time`): src/stores/operation.ts. Required of a store that serves them.
   */
  admitOperation?: OperationStore['admitOperation'];
  /** An operation's call once it ran: src/stores/operation.ts. */
  settleOperation?: OperationStore['settleOperation'];
}

/**
 * A store this library made (`createRedisStore`, `createMemoryStore`): a {@link RateLimitStore}
 * whose `close` and `ready` are always there, so `await store.close()` and `await store.ready()`
 * compile under `strict`.
 */
export type ClosableStore = RateLimitStore & {
  close(): Promise<void>;
  ready(): Promise<void>;
};

/** What `refundAndPeek` answers. */
export interface Refunded {
  /** Whether anything was refunded. */
  readonly refunded: boolean;
  /** The limit's state once refunded (`retryAfterMs` 0). */
  readonly state: LimitState;
}

/** The identity `rules[i]` counts against, from what `hit` was given. */
export const identityAt = (identity: string | readonly string[], i: number): string =>
  typeof identity === 'string' ? identity : (identity[i] as string);

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
