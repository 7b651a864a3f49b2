import { ALGORITHMS, type RateLimitAlgorithm, type RateLimitRule } from '../../rate-limit-rule';
import { counterKey } from '../../keys';
import { luaScript } from '../../lua';
import { script } from './eval-script';
import { identityAt, type Decision, type LimitState } from '../store';

/*
 * The TypeScript side of `lua/hit.lua`: how a batch of hits is packed into KEYS and ARGV, and how
 * the reply is read back. The names match the script's header. In: the batch's distinct limits as
 * `algorithm, limit, windowMs, cost`, then per hit its limits by number (after the counters
 * themselves, `'k'` and their count, in a call routed by one key). Out: per hit `allowed`, then
 * per limit `remaining, resetMs, retryAfterMs`, or one error message when `allowed` is negative,
 * then, for a hit that asked for `receipts` and passed, per limit its receipt, and for a
 * give-back (`g` and its limits, then per limit `units, taken, receiptA, receiptB`) per limit
 * whether its units went back.
 */

/** The script's source, read once. */
export const HIT_LUA = luaScript('hit');

/** The script with its SHA-1, which EVALSHA names it by. */
export const HIT_SCRIPT = script(HIT_LUA);

/** The script's algorithm ids: the position in {@link ALGORITHMS}, from 1 as Lua counts. */
export const ALGORITHM_ID = Object.fromEntries(ALGORITHMS.map((a, i) => [a, i + 1])) as Record<
  RateLimitAlgorithm,
  number
>;

/** One hit as the script sees it. */
export interface PackedHit {
  /** One identity for every rule, or one per rule. */
  readonly identity: string | readonly string[];
  readonly rules: readonly RateLimitRule[];
  /** Units per rule. @default each rule's cost */
  readonly costs?: readonly number[] | undefined;
  /** Decide only: read the limits' state and count nothing. @default false */
  readonly peek?: boolean | undefined;
  /**
   * Also answer, when the hit passes, a receipt per limit naming what it took, so that it can
   * be given back exactly (src/stores/redis/give-back-script.ts). @default false
   */
  readonly receipts?: boolean | undefined;
  /** Its counters, one per rule, when they were already built. @default built from the rules */
  readonly keys?: readonly string[] | undefined;
  /**
   * Not a hit: gives back part of what an earlier hit of its one rule took (as the receipt
   * names it), then reads the limit's state, counting nothing; lua/hit.lua fails a give-back of
   * several rules, unwritten. @default undefined
   */
  readonly giveBack?: GiveBackOf | undefined;
  /**
   * The hit's lease token: its slots of CONCURRENCY limits are named by it (lua/lib/concurrency.lua).
   * A hit that takes such a slot has one. @default undefined
   */
  readonly lease?: string | undefined;
}

/** What a give-back returns, per rule: as lua/give-back.lua takes it. */
export interface GiveBackOf {
  /** Units given back per rule. */
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
  /** For a give-back, per rule: whether its units were given back. */
  readonly given?: readonly boolean[] | undefined;
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
  for (const { identity, rules, costs, peek, receipts, keys: built, giveBack, lease } of hits) {
    const n = rules.length;
    const leased = lease !== undefined && !peek && !giveBack;
    perHit.push(
      giveBack
        ? `g${n}`
        : peek
          ? -n
          : leased
            ? `${receipts ? 'r' : ''}l${n}`
            : receipts
              ? `r${n}`
              : n,
    );
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
    if (leased) perHit.push(lease);
    if (giveBack) {
      rules.forEach((_, i) => {
        const [a, b] = giveBack.receipts[i] as Receipt;
        perHit.push(giveBack.units[i] as number, giveBack.taken[i] as number, a, b);
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

/** What the script answers for a hit none of whose keys it could count on. */
const FAILED = -1;
/** What the script answers for a hit with a key that another node serves. */
const ELSEWHERE = -2;

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
  for (const { rules, peek, receipts, giveBack } of hits) {
    const allowed: unknown = reply[at++];
    if (allowed === FAILED) {
      outcomes.push(new Error(`Redis could not count this hit: ${String(reply[at++])}`));
      continue;
    }
    if (allowed === ELSEWHERE) {
      outcomes.push(new ElsewhereError(`Another node serves this hit: ${String(reply[at++])}`));
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
    if (giveBack && allowed === 1) {
      const given: boolean[] = [];
      for (let i = 0; i < rules.length; i++) given.push(reply[at++] === 1);
      outcomes.push({ allowed: true, limits, given });
      continue;
    }
    if (allowed !== 1 || !receipts || peek) {
      outcomes.push({ allowed: allowed === 1, limits });
      continue;
    }
    const taken: Receipt[] = [];
    for (let i = 0; i < rules.length; i++) taken.push([String(reply[at++]), String(reply[at++])]);
    outcomes.push({ allowed: true, limits, receipts: taken });
  }
  if (at !== reply.length) throw malformed();
  return outcomes;
}
