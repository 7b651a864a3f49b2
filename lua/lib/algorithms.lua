--[[ algorithms: every algorithm, one fragment each, and the dispatch by the id the callers send
  (1 = FIXED_WINDOW, 2 = SLIDING_WINDOW, 3 = TOKEN_BUCKET, 4 = CONCURRENCY: the order of
  ALGORITHMS in src/rate-limit-rule.ts). A new algorithm is a fragment of its own and one line here.
  Each algorithm is a table over its own key type:
  decide(key, limit, windowMs, cost, token) -> retryAfterMs, remaining, resetMs, stateA, stateB
    reads, and repairs the TTL; raises an error for a key it cannot count on. stateA and
    stateB are the algorithm's state for consume, as decide found it. A hit that passes leaves
    remaining - cost units, in every algorithm (for the bucket: floor(x - cost) = floor(x) - cost)
  consume(key, limit, windowMs, cost, resetMs, stateA, stateB, token) -> resetMs  (writes)
  hit(key, limit, windowMs, cost) -> retryAfterMs, remaining, resetMs  (optional; writes)
    a hit whose one limit this is, decided and consumed in one go, in fewer commands than decide
    then consume: the same answer and the same writes (nothing for a blocked hit), remaining
    after the hit when it passes, before it when blocked. Never given a lease token
  receipt(key, stateA, stateB, token) -> two strings that name what the hit just consumed on key.
    A hit on several hash tags of a cluster is decided part by part (src/stores/redis/across-tags.ts),
    and a part taken before another part blocked is refunded, which must never give units to a
    window, log or bucket the hit did not take from; an operation's cost budget refunds what its
    actual cost did not use. Asked for only by a take, so other hits pay nothing for them
  refund(key, limit, windowMs, cost, taken, receiptA, receiptB) -> 1 (refunded) or 0 (nothing):
    refunds cost of the taken units, where they still count, and nothing else
  token: the hit's lease token (false for a peek, nil for a hit that sent none), which only
    CONCURRENCY reads: its slots are named by it (lib/concurrency)
  Values travel as multiple returns, not tables: this runs once per limit of every hit. ]]

--- @include "lib/clock"
--- @include "lib/bucket-time"
--- @include "lib/sliding-member"
--- @include "lib/fixed-window"
--- @include "lib/sliding-window"
--- @include "lib/token-bucket"
--- @include "lib/concurrency"

local algorithms = { fixed, sliding, bucket, concurrency }
