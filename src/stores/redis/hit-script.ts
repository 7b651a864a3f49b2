import {
  ALGORITHMS,
  isConcurrency,
  type RateLimitAlgorithm,
  type RateLimitRule,
} from '../../rate-limit-rule';
import { counterKey } from '../keys';
import { script } from './eval-script';
import { identityAt, type Decision, type LimitState } from '../store';
import { HIT_REPLY, REFUND_REPLY } from './reply-codes';

/*
 * The TypeScript side of `lua/hit.lua` (and of its function in `lua/library.lua`): how a batch of
 * calls is packed into KEYS and ARGV, and how the reply is read back. The names match the
 * script's header. In: the batch's distinct limits as `algorithm, limit, windowMs, cost`, then
 * per call its kind, its number of limits and its limits by number (after the counters
 * themselves, `'k'` and their count, in a call routed by one key), then for a hit or a take
 * with a CONCURRENCY limit, or a release, its lease token (`''` when it has none), and for a refund per limit `units, taken, receiptA,
 * receiptB`. Out: per call `allowed`, then per limit `remaining,
 * resetMs, retryAfterMs`, or one error message when `allowed` is negative, then, for a take that
 * passed, per limit its receipt, for a refund per limit whether its units went back, and for a
 * release, instead of each limit's state, per limit the slots it freed.
 */

/** The script with its SHA-1, which EVALSHA names it by. */
export const HIT_SCRIPT = script('hit');

/** The script's source. */
export const HIT_LUA = HIT_SCRIPT.source;

/** The script's algorithm ids: the position in {@link ALGORITHMS}, from 1 as Lua counts. */
export const ALGORITHM_ID = Object.fromEntries(ALGORITHMS.map((a, i) => [a, i + 1])) as Record<
  RateLimitAlgorithm,
  number
>;

/**
 * What a call of the script does, one kind per call from the store's methods to the script:
 * - `hit`: decides every limit and, when all allow, consumes them all; its lease token names
 *   the slots it takes of CONCURRENCY limits;
 * - `peek`: decides, counting nothing;
 * - `take`: a hit that also answers, when it passes, a receipt per limit naming what it took,
 *   so that it can be refunded exactly (a budget's take, a part of a hit across masters);
 * - `refund`: refunds part of what a take of its one rule took (as the receipt names it), then
 *   reads the limit's state, counting nothing; the script fails a refund of several rules,
 *   unwritten;
 * - `release`: frees the slots its lease token names on its CONCURRENCY limits (one hash tag),
 *   so that the releases of one turn go in one call, as its hits do; answers per limit the
 *   slots it freed.
 */
export type CallKind = 'hit' | 'peek' | 'take' | 'refund' | 'release';

/** One call as the script sees it. */
export interface PackedHit {
  readonly kind: CallKind;
  /** One identity for every rule, or one per rule. */
  readonly identity: string | readonly string[];
  readonly rules: readonly RateLimitRule[];
  /** Units per rule. @default each rule's cost */
  readonly costs?: readonly number[] | undefined;
  /** Its counters, one per rule, when they were already built. @default built from the rules */
  readonly keys?: readonly string[] | undefined;
  /** For a `refund`: what it refunds. */
  readonly refund?: RefundOf | undefined;
  /**
   * For a `hit` or a `take`: its lease token, which names its slots of CONCURRENCY limits
   * (lua/lib/concurrency.lua); sent after its limit numbers when it has such a limit (`''` when
   * it has no token, which the script refuses), not at all otherwise. A hit that takes such a
   * slot has one. For a `release`: the token of the lease it frees. @default undefined
   */
  readonly lease?: string | undefined;
}

/** What a refund returns, per rule: as lua/refund.lua takes it. */
export interface RefundOf {
  /** Units refunded per rule. */
  readonly units: readonly number[];
  /** Units the take took per rule. */
  readonly taken: readonly number[];
  readonly receipts: readonly Receipt[];
}

/** What the script took of one limit for a hit that passed: two values, opaque here. */
export type Receipt = readonly [string, string];

/** A hit's decision as the script answered it, with its receipts when it asked and passed. */
export interface ScriptDecision extends Decision {
  readonly receipts?: readonly Receipt[] | undefined;
  /** For a refund, per rule: whether its units were refunded. */
  readonly refunded?: readonly boolean[] | undefined;
  /** For a release, per rule: the slots it freed. */
  readonly released?: readonly number[] | undefined;
}

/**
 * KEYS and ARGV of one script call deciding `hits` in order. ARGV starts with the batch's distinct
 * limits (a rule at a cost), which each hit then names by number: hits share a few rules.
 */
export function packHits(
  prefix: string,
  hits: readonly PackedHit[],
): { keys: string[]; argv: (string | number)[] } {
  const keys: string[] = [];
  const limits: (string | number)[] = [];
  const perHit: (string | number)[] = [];
  // the number of each rule at each cost, from 1; the rules of one directive are one object
  const numbers = new Map<RateLimitRule, Map<number, number>>();
  let count = 0;
  for (const { kind, identity, rules, costs, keys: built, refund, lease } of hits) {
    const n = rules.length;
    perHit.push(kind, n);
    rules.forEach((rule, i) => {
      keys.push(built?.[i] ?? counterKey(prefix, identityAt(identity, i), rule));
      const cost = costs?.[i] ?? rule.cost;
      let byCost = numbers.get(rule);
      if (!byCost) numbers.set(rule, (byCost = new Map()));
      let number = byCost.get(cost);
      if (number === undefined) {
        byCost.set(cost, (number = ++count));
        limits.push(ALGORITHM_ID[rule.algorithm], rule.limit, rule.windowSeconds * 1000, cost);
      }
      perHit.push(number);
    });
    // a token only where the script reads one: a hit or a take with a CONCURRENCY limit
    if ((kind === 'hit' || kind === 'take') && rules.some(isConcurrency)) perHit.push(lease ?? '');
    if (kind === 'release') {
      if (lease === undefined) throw new Error('A release names the lease it frees');
      perHit.push(lease);
    }
    if (kind === 'refund') {
      if (!refund) throw new Error('A refund names what it refunds');
      rules.forEach((_, i) => {
        const [a, b] = refund.receipts[i] as Receipt;
        perHit.push(refund.units[i] as number, refund.taken[i] as number, a, b);
      });
    }
  }
  return { keys, argv: [count, ...limits, ...perHit] };
}

/**
 * The arguments of one script call (numkeys, KEYS, ARGV) deciding `hits` in order. `routed`
 * (a cluster batch, whose counters may span the slots of one master) declares only the first
 * counter, which routes the call to its master, and passes them all in ARGV after `'k'`.
 */
export function hitArgs(
  prefix: string,
  hits: readonly PackedHit[],
  routed: boolean,
): (string | number)[] {
  const { keys, argv } = packHits(prefix, hits);
  return routed
    ? [1, keys[0] as string, 'k', keys.length, ...keys, ...argv]
    : [keys.length, ...keys, ...argv];
}

/**
 * A hit the script did not count because the node it ran on does not serve one of its keys (a
 * stale slot map, a slot being moved): it may be sent again where its keys live.
 */
export class ElsewhereError extends Error {}

/**
 * The outcome of each of `hits` from the script's reply: its decision, or the error that failed
 * that hit alone (a key of another type at one of its counters, or an {@link ElsewhereError}).
 * Throws on a malformed reply.
 */
export function parseHitReply(
  reply: unknown,
  hits: readonly PackedHit[],
): (ScriptDecision | Error)[] {
  const malformed = () =>
    new Error(`Unexpected reply from the rate limit script: ${JSON.stringify(reply)}`);
  if (!Array.isArray(reply)) throw malformed();
  const outcomes: (ScriptDecision | Error)[] = [];
  let at = 0;
  for (const { kind, rules } of hits) {
    const allowed: unknown = reply[at++];
    if (allowed === HIT_REPLY.FAILED) {
      outcomes.push(new Error(`Redis could not count this hit: ${String(reply[at++])}`));
      continue;
    }
    if (allowed === HIT_REPLY.ELSEWHERE) {
      outcomes.push(new ElsewhereError(`Another node serves this hit: ${String(reply[at++])}`));
      continue;
    }
    if (kind === 'release' && allowed === 1) {
      const released: number[] = [];
      for (let i = 0; i < rules.length; i++) released.push(Number(reply[at++]));
      outcomes.push({ allowed: true, limits: [], released });
      continue;
    }
    const limits: LimitState[] = [];
    for (let i = 0; i < rules.length; i++) {
      limits.push({
        remaining: Number(reply[at++]),
        resetMs: Number(reply[at++]),
        retryAfterMs: Number(reply[at++]),
      });
    }
    if (kind === 'refund' && allowed === HIT_REPLY.ALLOWED) {
      const refunded: boolean[] = [];
      for (let i = 0; i < rules.length; i++) refunded.push(reply[at++] === REFUND_REPLY.REFUNDED);
      outcomes.push({ allowed: true, limits, refunded });
      continue;
    }
    if (allowed !== HIT_REPLY.ALLOWED || kind !== 'take') {
      outcomes.push({ allowed: allowed === HIT_REPLY.ALLOWED, limits });
      continue;
    }
    const taken: Receipt[] = [];
    for (let i = 0; i < rules.length; i++) taken.push([String(reply[at++]), String(reply[at++])]);
    outcomes.push({ allowed: true, limits, receipts: taken });
  }
  if (at !== reply.length) throw malformed();
  return outcomes;
}
