import { counterKey } from '../keys';
import type { RateLimitRule } from '../../rate-limit-rule';
import type { StoreConnection } from './clients/adapter';
import { evalScript, script, type Functions } from './eval-script';
import { ALGORITHM_ID } from './hit-script';
import { newLeaseToken } from './leases';
import type { LimitState } from '../store';
import {
  policiesOf,
  type OperationAdmission,
  type OperationLimits,
  type OperationPolicy,
  type OperationSettlement,
  type OperationStore,
  type OperationTicket,
} from '../store';

/*
 * The TypeScript side of `lua/operation.lua` (and of its function in `lua/library.lua`): an
 * operation's two calls, each one script call on its identity's hash tag, so on a Cluster on
 * one master. In: the counters of the budget, the time and the in-flight slots (those there)
 * as KEYS; the call's kind (`admit` or `settle`), the lease token, then per key its policy
 * ('b', 't', 'i') and values. Out: `allowed`, per key `remaining, resetMs, retryAfterMs`, the
 * budget's receipt (admit); per key `remaining, resetMs` (settle).
 */

/** The script, with its SHA-1 and its function in the library. */
export const OPERATION_SCRIPT = script('operation');

/**
 * KEYS and ARGV of one call for `identity`: per policy of `limits` (in policiesOf order), its
 * counter and its values, which `part` writes after the policy's letter.
 */
function pack(
  prefix: string,
  identity: string,
  limits: OperationLimits,
  head: readonly (string | number)[],
  part: (rule: RateLimitRule, policy: OperationPolicy) => (string | number)[],
): (string | number)[] {
  const keys: string[] = [];
  const argv: (string | number)[] = [...head];
  for (const policy of policiesOf(limits)) {
    const rule = (policy === 'budget' ? limits.budget?.rule : limits[policy]) as RateLimitRule;
    keys.push(counterKey(prefix, identity, rule));
    argv.push(POLICY_LETTER[policy], ...part(rule, policy));
  }
  return [keys.length, ...keys, ...argv];
}

/** How the script names each policy. */
const POLICY_LETTER: Record<OperationPolicy, string> = { budget: 'b', time: 't', inFlight: 'i' };

/** KEYS and ARGV of the admission of `limits` for `identity`. */
export function packAdmit(
  prefix: string,
  identity: string,
  limits: OperationLimits,
  token: string,
): (string | number)[] {
  return pack(prefix, identity, limits, ['admit', token], (rule, policy) => {
    const windowMs = rule.windowSeconds * 1000;
    if (policy === 'budget') {
      return [ALGORITHM_ID[rule.algorithm], rule.limit, windowMs, limits.budget?.units ?? 0];
    }
    return policy === 'time' ? [rule.limit, windowMs, rule.cost] : [rule.limit, windowMs];
  });
}

/** KEYS and ARGV of the settlement of an operation admitted with `ticket`. */
export function packSettle(
  prefix: string,
  identity: string,
  limits: OperationLimits,
  { token, receipt }: OperationTicket,
  { budgetUnits, timeMs }: OperationSettlement,
): (string | number)[] {
  return pack(prefix, identity, limits, ['settle', token], (rule, policy) => {
    const windowMs = rule.windowSeconds * 1000;
    if (policy === 'budget') {
      const units = limits.budget?.units ?? 0;
      const [a, b] = receipt?.mark ?? ['0', '0'];
      // without a receipt nothing can be proved to be owed: nothing goes back
      const back = receipt ? Math.min(budgetUnits, units) : 0;
      return [ALGORITHM_ID[rule.algorithm], rule.limit, windowMs, back, units, a, b];
    }
    if (policy === 'inFlight') return [rule.limit, windowMs];
    // the time taken less the reservation: charged, or refunded when negative
    return [rule.limit, windowMs, Math.round(timeMs * 1000) - rule.cost * 1000];
  });
}

/** The admission the script answered; throws on a malformed reply. */
export function parseAdmit(
  reply: unknown,
  limits: OperationLimits,
  token: string,
): OperationAdmission {
  const n = policiesOf(limits).length;
  if (!Array.isArray(reply) || (reply[0] !== 0 && reply[0] !== 1) || reply.length < 1 + 3 * n) {
    throw new Error(`Unexpected reply from the operation script: ${JSON.stringify(reply)}`);
  }
  const allowed = reply[0] === 1;
  const states: LimitState[] = [];
  for (let i = 0; i < n; i++) {
    const [remaining, resetMs, retryAfterMs] = reply.slice(1 + 3 * i, 4 + 3 * i).map(Number);
    states.push({
      remaining: remaining as number,
      resetMs: resetMs as number,
      retryAfterMs: retryAfterMs as number,
    });
  }
  if (!allowed) return { allowed, limits: states };
  const units = limits.budget?.units;
  const mark = reply.slice(1 + 3 * n, 3 + 3 * n).map(String);
  const receipt =
    units !== undefined && mark.length === 2
      ? { units, mark: [mark[0] as string, mark[1] as string] as const }
      : undefined;
  return { allowed, limits: states, ticket: { token, receipt } };
}

/** The states the settlement answered, one per policy. */
export function parseSettle(reply: unknown, limits: OperationLimits): LimitState[] {
  const n = policiesOf(limits).length;
  if (!Array.isArray(reply) || reply.length !== 2 * n) {
    throw new Error(`Unexpected reply from the operation script: ${JSON.stringify(reply)}`);
  }
  return Array.from({ length: n }, (_, i) => ({
    remaining: Number(reply[2 * i]),
    resetMs: Number(reply[2 * i + 1]),
    retryAfterMs: 0,
  }));
}

/**
 * `admitOperation` and `settleOperation` of a Redis store: each one script call, sent as
 * `reset` is (refused at once while the connection has not been ready for `connectWaitMs`).
 */
export function redisOperations(
  connection: StoreConnection,
  prefix: string,
  unready: () => string | undefined,
  whenReady: () => Promise<void>,
  functions: Functions,
): OperationStore {
  const run = async (args: (string | number)[]): Promise<unknown> => {
    const refusal = unready();
    if (refusal !== undefined) throw new Error(refusal);
    await whenReady();
    return evalScript(connection, OPERATION_SCRIPT, args, undefined, functions);
  };
  return {
    async admitOperation(identity, limits) {
      const token = newLeaseToken();
      const reply = await run(packAdmit(prefix, identity, limits, token));
      return parseAdmit(reply, limits, token);
    },
    async settleOperation(identity, limits, ticket, settlement) {
      const reply = await run(packSettle(prefix, identity, limits, ticket, settlement));
      return parseSettle(reply, limits);
    },
  };
}
