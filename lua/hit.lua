--[[ hit: decide and consume the limits of a batch of hits, each one atomically. Run as a script
  (EVALSHA, EVAL after NOSCRIPT) where Redis has no functions; lua/library.lua is the same call
  as a function.
  KEYS     the counters of every limit of every hit: hit after hit, in the order of its rules.
           All keys of one identity carry its hash tag, so they share a slot. On a cluster a
           batch holds the hits of one master, whose keys span many slots, and a call that
           declares keys of two slots is refused (CROSSSLOT): KEYS then holds only one of them,
           which routes the call to the master, and ARGV starts with 'k', the number of
           counters, and the counters in the order above. A script without flags may touch
           undeclared keys of every slot its node serves; a key of another node fails its command.
  ARGV     (after the counters, if there) the batch's distinct limits: their number m, then
           four values each: algorithm, limit, windowMs, cost (algorithm: 1 = FIXED_WINDOW,
           2 = SLIDING_WINDOW, 3 = TOKEN_BUCKET, 4 = CONCURRENCY, the order of ALGORITHMS in
           src/rate-limit-rule.ts); then for each call of the batch: its kind, its number of
           limits n, then n limit numbers (1 to m), in the counters' order. The kinds:
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
                     fails, -1, unwritten). Hits share
           a few limits, which are sent and read once per batch: reading four values per limit
           of every hit was a good part of what a limit cost (see BENCHMARKS.md).
  The TypeScript side of this format is src/stores/redis/hit-script.ts, with the same names.
  Returns  for each call, in order: allowed, then either per limit remaining, resetMs,
           retryAfterMs, or, when allowed is negative, one error message; and, for a take that
           passed, then per limit two values that name exactly what it took (receipt, in
           lib/algorithms), for a refund. A refund answers allowed 1 and its limit's state once
           refunded (retryAfterMs 0), then 1 when its units were refunded, 0 when nothing was
           (see lua/refund.lua).
           allowed is 1 when every limit of the hit passed and all were consumed, 0 when any
           blocked and nothing was written for it, -1 when a key of the hit could not be read
           as its counter (a key of another type, or a value this script never writes, put
           there by someone else), -2 when a key of the hit is served by another node (the
           client's slot map is stale, a slot is being moved): either way nothing was counted
           for that hit, and the other hits of the batch are decided as if it were not there.
           Per limit: units left after the hit (before it, when blocked), ms until the limit is
           whole again, and ms until a hit of this cost would pass (0 when it passes now).
  Time comes from the server's clock (TIME, read once per call), never from a client. Calls
  are decided one after the other, as if they had arrived in that order: each decides every
  limit first and writes only when all of them allow, so a blocked hit consumes nothing (see
  lib/batch). ]]

--- @include "lib/algorithms"
--- @include "lib/batch"

return decideBatch(KEYS, ARGV)
