import { rulesError, type RateLimitRule } from '../rate-limit-rule';
import { RateLimitConfigError } from '../errors';

/** The state of one limit after a hit was decided. */
export interface LimitState {
  /** Units left after this hit (before it, when the hit was blocked). */
  readonly remaining: number;
  /** Milliseconds until the limit is whole again. */
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
   * Each take is refunded once. Resolves to whether anything was given back.
   */
  refund?(
    identity: string,
    rule: RateLimitRule,
    receipt: TakeReceipt,
    units: number,
  ): Promise<boolean>;
  /**
   * `refund`, then `peek` of `rule`, as one step: how a budget reports itself as the give-back
   * left it (other operations' takes, a reset, a new window included) without another call.
   * Without it, the budget calls `refund` and then `peek`.
   */
  refundAndPeek?(
    identity: string,
    rule: RateLimitRule,
    receipt: TakeReceipt,
    units: number,
  ): Promise<Refunded>;
}

/** What `refundAndPeek` answers. */
export interface Refunded {
  /** Whether anything was given back. */
  readonly given: boolean;
  /** The limit's state once given back (`retryAfterMs` 0). */
  readonly state: LimitState;
}

/** Receipts already refunded: a second refund of one take could give back someone else's units. */
const refunded = new WeakSet<TakeReceipt>();

/**
 * Why `refund(identity, rule, receipt, units)` cannot be made, or undefined when it can, in which
 * case `receipt` is spent: each take is refunded at most once.
 */
export function claimRefund(
  identity: string,
  rule: RateLimitRule,
  receipt: TakeReceipt,
  units: number,
): RateLimitConfigError | undefined {
  const taken = receipt?.units;
  if (!Number.isSafeInteger(taken) || taken < 1 || !Array.isArray(receipt.mark)) {
    return new RateLimitConfigError('refund: receipt must be one that take answered');
  }
  if (!Number.isSafeInteger(units) || units < 1 || units > taken) {
    return new RateLimitConfigError(
      `refund: units must be a whole number from 1 to the ${taken} taken, got ${String(units)}`,
    );
  }
  if (refunded.has(receipt)) return new RateLimitConfigError('refund: a take is refunded once');
  const misuse = hitError(identity, [rule]);
  if (!misuse) refunded.add(receipt);
  return misuse;
}

/** The identity `rules[i]` counts against, from what `hit` was given. */
export const identityAt = (identity: string | readonly string[], i: number): string =>
  typeof identity === 'string' ? identity : (identity[i] as string);

/**
 * Why `hit(identity, rules, costs)` cannot be counted, or undefined when it can: the stores check
 * what they are given, as `hit` may be called without a directive. Cheap per hit: each rule
 * object is checked once.
 */
export function hitError(
  identity: string | readonly string[],
  rules: readonly RateLimitRule[],
  costs?: readonly number[],
): RateLimitConfigError | undefined {
  if (typeof identity !== 'string') {
    if (!Array.isArray(identity) || identity.length !== rules.length) {
      return new RateLimitConfigError(
        'hit: identity must be a string, or an array of one string per rule',
      );
    }
    if (identity.some((id) => typeof id !== 'string')) {
      return new RateLimitConfigError('hit: every identity must be a string');
    }
  }
  if (costs !== undefined) {
    if (!Array.isArray(costs) || costs.length !== rules.length) {
      return new RateLimitConfigError('hit: costs must hold one number per rule');
    }
    for (let i = 0; i < costs.length; i++) {
      const cost = costs[i];
      const limit = (rules[i] as RateLimitRule).limit;
      if (!Number.isSafeInteger(cost) || (cost as number) < 1 || (cost as number) > limit) {
        return new RateLimitConfigError(
          `hit: costs[${i}] must be a whole number from 1 to the limit ${limit}, got ${String(cost)}`,
        );
      }
    }
  }
  return rulesError(rules);
}
