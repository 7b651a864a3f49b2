--[[ operation: the two store calls of one GraphQL operation whose identity has secondary limits
  (an in-flight slot, execution time) beside, or instead of, its cost budget. Run as a script
  where Redis has no functions; lua/library.lua is the same call as a function.
  KEYS     the counters of the operation's policies, all of the identity's hash tag (one slot):
           its cost budget, its execution time, its in-flight slots, those configured, in that order
  ARGV     the call's kind ('admit' or 'settle'), the operation's lease token, then per key its
           policy and its values:
             admit   'b' algorithm, limit, windowMs, units (the estimate)
                     't' limitMs, windowMs, reserveMs
                     'i' limit, leaseMs
             settle  'b' algorithm, limit, windowMs, units (refunded), taken, receiptA, receiptB
                     't' limitMs, windowMs, deltaUs (time taken less the reservation: more to
                         charge, or, negative, to refund)
                     'i' limit, leaseMs (the slot of the token is released)
  The TypeScript side of this format is src/stores/redis/operation-script.ts, with the same
  names.
  Returns  admit: allowed (1: every policy admitted it and all were taken; 0: one refused and
           nothing was written), then per key remaining, resetMs, retryAfterMs (the budget's
           and the time's remaining as after the take; time in ms, negative while in debt), then,
           when allowed with a budget, the budget's receiptA, receiptB (lib/algorithms).
           settle: per key remaining, resetMs once settled.
  Time comes from the server's clock (TIME, read once). A key of another type fails the call
  before anything is written (admit) or as it is reached (settle: what came before stays). ]]

--- @include "lib/algorithms"
--- @include "lib/execution-time"
--- @include "lib/operation"

return operationCall(KEYS, ARGV)
