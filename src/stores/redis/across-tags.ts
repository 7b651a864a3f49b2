import type { RateLimitRule } from '../../rate-limit-rule';
import { hashTag } from '../keys';
import type { Receipt, ScriptDecision } from './hit-script';
import { identityAt, type Decision, type LimitState } from '../store';

/*
 * A hit whose limits count against several identities (`by`) has keys under several hash tags,
 * which a Redis Cluster spreads over its masters, and no script can touch two slots. So such a
 * hit is decided in parts, one per hash tag, each an ordinary hit decided atomically by the hit
 * script on its own master:
 *
 * - The parts are taken one after the other, in the order the field's rules first name their
 *   identity. A part that blocks stops the hit: later parts are only read, never written, so a
 *   blocked hit touches no counter after its first blocking limit (and none at all when that is
 *   the first), and holds a unit of an earlier part only for the round trips until it is given
 *   back. Taking the parts all at once would save a round trip on a hit that passes, but every
 *   blocked hit would then take a unit on every master and refund it: more units held, more
 *   often, by exactly the hits that flood a limit.
 * - The hit passes only if every part passed, so it is never admitted beyond any limit: each
 *   limit admitted it atomically, within its count.
 * - When a part blocks, or fails, the parts taken before it are refunded (lua/refund.lua)
 *   before the hit is answered: each receipt names the window, the log entries or the time of
 *   the take, so that nothing goes back to a window the hit did not take from, nor more than it
 *   took (a bucket's tokens come back less the time since the take).
 * - A refund that fails leaves its units until their window ends: the hit is still answered
 *   blocked. A part that fails (timeout, lost node) may or may not have been counted: its units,
 *   if any, also stay until their window ends, and the hit fails.
 */

/** The rules of a hit under one hash tag: one identity of one source. */
export interface TagPart {
  readonly identity: string;
  readonly rules: readonly RateLimitRule[];
  readonly costs: readonly number[];
  /** Where each of `rules` stands in the whole hit. */
  readonly at: readonly number[];
}

/** How a hit's parts are decided, on the masters their tags live on. */
export interface PartSteps {
  /**
   * Takes `part` when all its limits allow it; with `receipts`, also a receipt per limit when it
   * passes (the last part needs none: nothing after it can make it go back).
   */
  take(part: TagPart, receipts: boolean, lease?: string): Promise<ScriptDecision>;
  /** The state of `part`'s limits for a hit of its costs, counting nothing. */
  peek(part: TagPart): Promise<Decision>;
  /** Refunds what `part` took; per limit, whether its units were refunded. */
  refund(part: TagPart, receipts: readonly Receipt[]): Promise<readonly boolean[]>;
}

/** `rules` split by hash tag, each part in the order its tag first appears; one part if one tag. */
export function splitByTag(
  identity: string | readonly string[],
  rules: readonly RateLimitRule[],
  costs: readonly number[] | undefined,
): TagPart[] {
  const parts = new Map<
    string,
    { identity: string; rules: RateLimitRule[]; costs: number[]; at: number[] }
  >();
  rules.forEach((rule, i) => {
    const id = identityAt(identity, i);
    const tag = hashTag(id, rule);
    let part = parts.get(tag);
    if (!part) parts.set(tag, (part = { identity: id, rules: [], costs: [], at: [] }));
    part.rules.push(rule);
    part.costs.push(costs?.[i] ?? rule.cost);
    part.at.push(i);
  });
  return [...parts.values()];
}

/**
 * Decides a hit split into `parts` (see above): allowed when every part was taken; otherwise
 * blocked, once the parts taken are refunded. `limits` holds a state for each of `rules`: the
 * state its part's script gave; for a limit refunded, its state before the hit; for a limit
 * never reached, as read after the block (whole, when it cannot be read).
 */
export async function hitAcrossTags(
  parts: readonly TagPart[],
  rules: readonly RateLimitRule[],
  steps: PartSteps,
  lease?: string,
): Promise<Decision> {
  const limits: LimitState[] = rules.map((rule) => ({
    remaining: rule.limit,
    resetMs: 0,
    retryAfterMs: 0,
  }));
  const place = (part: TagPart, states: readonly LimitState[]): void => {
    part.at.forEach((at, i) => (limits[at] = states[i] as LimitState));
  };
  const taken: { part: TagPart; decision: ScriptDecision }[] = [];
  let next = 0;
  let blocked = false;
  while (next < parts.length && !blocked) {
    const part = parts[next++] as TagPart;
    let decision: ScriptDecision;
    try {
      // each part takes its slots under the hit's one lease token
      decision = await steps.take(part, next < parts.length, lease);
    } catch (error) {
      await refundAll(taken, steps);
      throw error;
    }
    place(part, decision.limits);
    if (decision.allowed) taken.push({ part, decision });
    else blocked = true;
  }
  if (!blocked) return { allowed: true, limits };

  const [refunded] = await Promise.all([
    refundAll(taken, steps),
    ...parts.slice(next).map((part) =>
      steps.peek(part).then(
        (decision) => place(part, decision.limits),
        () => undefined,
      ),
    ),
  ]);
  taken.forEach(({ part, decision }, j) => {
    place(
      part,
      decision.limits.map((state, i) =>
        refunded[j]?.[i]
          ? { ...state, remaining: state.remaining + (part.costs[i] as number) }
          : state,
      ),
    );
  });
  return { allowed: false, limits };
}

/** A peek of a hit split into `parts`: every part read at once, as a peek writes nothing. */
export async function peekAcrossTags(
  parts: readonly TagPart[],
  rules: readonly RateLimitRule[],
  peek: PartSteps['peek'],
): Promise<Decision> {
  const decisions = await Promise.all(parts.map(peek));
  const limits = new Array<LimitState>(rules.length);
  parts.forEach((part, j) => {
    const states = (decisions[j] as Decision).limits;
    part.at.forEach((at, i) => (limits[at] = states[i] as LimitState));
  });
  return { allowed: decisions.every((d) => d.allowed), limits };
}

/** Refunds every part of `taken`; per part, what was refunded (nothing when it failed). */
function refundAll(
  taken: readonly { part: TagPart; decision: ScriptDecision }[],
  steps: PartSteps,
): Promise<(readonly boolean[] | undefined)[]> {
  return Promise.all(
    taken.map(({ part, decision }) =>
      decision.receipts
        ? steps.refund(part, decision.receipts).catch(() => undefined)
        : Promise.resolve(undefined),
    ),
  );
}
