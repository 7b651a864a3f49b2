/*
 * The codes the Lua scripts answer with, named once for both sides: each script's header lists
 * the codes it answers as `NAME = value`, `lua/lib/batch.lua` declares them under the same names,
 * and a test holds the three against these objects.
 */

/** What `lua/hit.lua` answers first for each call of its batch (`allowed`). */
export const HIT_REPLY = {
  /** Every limit of the call passed (for a hit or a take, all were consumed). */
  ALLOWED: 1,
  /** A limit blocked; nothing was written for the call. */
  BLOCKED: 0,
  /** A key of the call could not be read as its counter; nothing was counted for it. */
  FAILED: -1,
  /** A key of the call is served by another node; nothing was counted for it. */
  ELSEWHERE: -2,
} as const;

/** What `lua/refund.lua` answers per limit, and `lua/hit.lua` after a refund's state. */
export const REFUND_REPLY = {
  /** The units were refunded. */
  REFUNDED: 1,
  /** Nothing was: the units no longer count, or the key is no longer the one they came from. */
  KEPT: 0,
} as const;
