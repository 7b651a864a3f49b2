--[[ refund: return what one hit took of some limits, where it still counts, and nothing else.
  Run as a script where Redis has no functions; lua/library.lua is the same call as a function.
  A hit whose limits live on several hash tags of a cluster is decided tag by tag
  (src/stores/redis/across-tags.ts); when one part blocks, the parts already taken are refunded here,
  so that a blocked hit leaves no unit behind. (An operation's cost budget refunds what its
  actual cost did not use through lua/hit.lua's batches: src/stores/redis/take-and-refund.ts.)
  KEYS[i]            the counter of limit i refunded, all of one hash tag (one slot)
  ARGV[7i-6..7i]     per limit i, in KEYS order: algorithm, limit, windowMs, cost, taken,
                     receiptA, receiptB: cost units refunded of the taken units the hit took, the
                     receipt being the two values lua/hit.lua returned for that limit when it was
                     taken (algorithm ids as in lib/algorithms)
  The TypeScript side of this format is src/stores/redis/refund-script.ts, with the same
  names.
  Codes    per limit (src/stores/redis/reply-codes.ts, REFUND_REPLY):
             REFUNDED = 1    the units were refunded
             KEPT = 0        nothing was
  Returns  per limit: REFUNDED when the units were refunded (a bucket's tokens less the time
           since the take, see lib/token-bucket), KEPT when nothing was: the units no longer count (the window
           ended, the tokens had time to refill), the key is no longer the one they were taken
           from (a new window, someone else's write), or there is no receipt (Redis before 7.0
           has no PEXPIRETIME, so the units stay until their window ends).
  A refund never returns more than the hit took, nor to a window, log or bucket the hit did
  not take from: what it cannot prove is still owed, it leaves. Time comes from the server's
  clock (TIME, read once). Each limit is read and checked under pcall before its one write, so a
  key of another type leaves that limit as it is (0) and the others are still refunded. ]]

--- @include "lib/algorithms"
--- @include "lib/batch"

return refundParts(KEYS, ARGV)
