import type { RateLimitRule } from '../../rate-limit-rule';
import { counterKey } from '../keys';
import { script } from './eval-script';
import { ALGORITHM_ID, type Receipt } from './hit-script';
import { REFUND_REPLY } from './reply-codes';

/*
 * The TypeScript side of `lua/refund.lua` (and of its function in `lua/library.lua`): how what
 * one hit took is packed into KEYS and ARGV, and how the reply is read back. The names match the
 * script's header: per limit `algorithm, limit, windowMs, cost, taken, receiptA, receiptB` in;
 * per limit 1 (refunded) or 0 out.
 */

/** The script with its SHA-1, which EVALSHA names it by. */
export const REFUND_SCRIPT = script('refund');

/** The script's source. */
export const REFUND_LUA = REFUND_SCRIPT.source;

/** What one hit took of limits of one identity, as the hit script's receipts name it. */
export interface TakenHit {
  readonly identity: string;
  readonly rules: readonly RateLimitRule[];
  /** Units refunded per rule. @default each rule's cost */
  readonly costs?: readonly number[] | undefined;
  /**
   * Units the hit took per rule, when it refunds only part of them (a budget's refund).
   * @default `costs`: all of them
   */
  readonly taken?: readonly number[] | undefined;
  /** One per rule, as `lua/hit.lua` returned them. */
  readonly receipts: readonly Receipt[];
}

/** KEYS and ARGV of one script call refunding `taken`. */
export function packRefund(
  prefix: string,
  { identity, rules, costs, taken, receipts }: TakenHit,
): { keys: string[]; argv: (string | number)[] } {
  const keys: string[] = [];
  const argv: (string | number)[] = [];
  rules.forEach((rule, i) => {
    keys.push(counterKey(prefix, identity, rule));
    const [a, b] = receipts[i] as Receipt;
    const cost = costs?.[i] ?? rule.cost;
    const took = taken?.[i] ?? cost;
    argv.push(
      ALGORITHM_ID[rule.algorithm],
      rule.limit,
      rule.windowSeconds * 1000,
      cost,
      took,
      a,
      b,
    );
  });
  return { keys, argv };
}

/** Per limit of `taken`, whether its units were refunded. Throws on a malformed reply. */
export function parseRefundReply(reply: unknown, taken: TakenHit): boolean[] {
  if (
    !Array.isArray(reply) ||
    reply.length !== taken.rules.length ||
    reply.some((code) => code !== REFUND_REPLY.REFUNDED && code !== REFUND_REPLY.KEPT)
  ) {
    throw new Error(`Unexpected reply from the refund script: ${JSON.stringify(reply)}`);
  }
  return reply.map((code) => code === REFUND_REPLY.REFUNDED);
}
