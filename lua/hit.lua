--[[ hit: decide and consume the limits of a batch of hits, each one atomically. Run as a script
  (EVALSHA, EVAL after NOSCRIPT) where Redis has no functions; lua/library.lua is the same call
  as a function.
  KEYS[1..c]      the c counters of every limit of every call: call after call, in the order of
                  its rules. All keys of one identity carry its hash tag, so they share a slot.
  or, routed      on a cluster a batch holds the hits of one master, whose keys span many slots,
                  and a call that declares keys of two slots is refused (CROSSSLOT):
    KEYS[1]       one counter, which routes the call to the master
    ARGV[1]       'k'
    ARGV[2]       c, the number of counters
    ARGV[3..c+2]  the c counters, in the order above. A script without flags may touch
                  undeclared keys of every slot its node serves; a key of another node fails
                  its command.
  ARGV[a]         (a = 1, or c + 3 when routed) m, the number of the batch's distinct limits
  ARGV[a+1..a+4m] per limit j, four values: algorithm, limit, windowMs, cost (algorithm:
                  1 = FIXED_WINDOW, 2 = SLIDING_WINDOW, 3 = TOKEN_BUCKET, 4 = CONCURRENCY, the
                  order of ALGORITHMS in src/rate-limit-rule.ts)
  ARGV[a+4m+1..]  per call of the batch: its kind, its number of limits n, then n limit numbers
                  (1 to m), in the counters' order, then what its kind adds. The kinds:
             hit     decides and, when every limit allows, consumes them all; after its limit
                     numbers, when one of them is CONCURRENCY (and only then), its lease token,
                     which names the slots it takes ('' when it has none, which a CONCURRENCY
                     limit fails, unwritten: lib/concurrency). A hit of one limit whose
                     algorithm has a hit of its own (lib/algorithms) is decided by it
             peek    decides, never writes: its state is read and nothing is counted
             take    a hit (with its lease token) that, when it passes, also answers a receipt
                     per limit
             release names CONCURRENCY limits of one hash tag, and then the lease token
                     whose slots it frees (a call that ended); answers allowed 1 and per
                     limit the slots freed (a slot that expired or was reset frees nothing)
             refund  names one limit, and then four values: units, taken, receiptA, receiptB,
                     as lua/refund.lua takes them; it refunds, then reads the limit's state
                     (an operation's cost budget refunds what it did not use in the same
                     batches as the hits, and reads its state there; a refund of another n
                     fails, FAILED, unwritten). Hits share
           a few limits, which are sent and read once per batch: reading four values per limit
           of every hit was a good part of what a limit cost (see BENCHMARKS.md).
  The TypeScript side of this format is src/stores/redis/hit-script.ts, with the same names.
  Codes    allowed, per call (src/stores/redis/reply-codes.ts, HIT_REPLY):
             ALLOWED = 1     every limit passed (and, for a hit or a take, all were consumed)
             BLOCKED = 0     a limit blocked; nothing was written for the call
             FAILED = -1     a key could not be read as its counter; nothing was counted for it
             ELSEWHERE = -2  a key is served by another node; nothing was counted for it
           after a refund's state (REFUND_REPLY):
             REFUNDED = 1    its units were refunded
             KEPT = 0        nothing was (see lua/refund.lua)
  Returns  for each call, in order: allowed (a code above), then either per limit remaining,
           resetMs, retryAfterMs, or, when allowed is FAILED or ELSEWHERE, one error message;
           and, for a take that passed, then per limit two values that name exactly what it
           took (receipt, in lib/algorithms), for a refund. A refund answers ALLOWED and its
           limit's state once refunded (retryAfterMs 0), then REFUNDED or KEPT. A FAILED key
           is one of another type, or a value this script never writes, put there by someone
           else; an ELSEWHERE one, a stale slot map or a slot being moved: either way the other
           hits of the batch are decided as if that hit were not there.
           Per limit: units left after the hit (before it, when blocked), ms until the limit is
           whole again, and ms until a hit of this cost would pass (0 when it passes now).
  Time comes from the server's clock (TIME, read once per call), never from a client. Calls
  are decided one after the other, as if they had arrived in that order: each decides every
  limit first and writes only when all of them allow, so a blocked hit consumes nothing (see
  lib/batch). ]]

--- @include "lib/algorithms"
--- @include "lib/batch"

return decideBatch(KEYS, ARGV)
