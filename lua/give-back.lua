--[[ give-back: return what one hit took of some limits, where it still counts, and nothing else.
  A hit whose limits live on several hash tags of a cluster is decided tag by tag
  (src/stores/redis/across-tags.ts); when one part blocks, the parts already taken are given back here,
  so that a blocked hit leaves no unit behind. An operation's cost budget takes its estimate and
  gives back here what its actual cost did not use (src/stores/redis/take-and-refund.ts): part of a take.
  KEYS     the counters of the limits given back, all of one hash tag (one slot)
  ARGV     per limit, in KEYS order: algorithm, limit, windowMs, cost, taken, receiptA, receiptB:
           cost units given back of the taken units the hit took, the receipt being the two
           values lua/hit.lua returned for that limit when it was taken (algorithm ids as in
           lua/hit.lua)
  The TypeScript side of this format is src/stores/redis/give-back-script.ts, with the same names.
  Returns  per limit: 1 when the units were given back (a bucket's tokens less the time since
           the take, see below), 0 when nothing was: the units no longer count (the window
           ended, the tokens had time to refill), the key is no longer the one they were taken
           from (a new window, someone else's write), or there is no receipt (Redis before 7.0
           has no PEXPIRETIME, so the units stay until their window ends).
  A give-back never returns more than the hit took, nor to a window, log or bucket the hit did
  not take from: what it cannot prove is still owed, it leaves. Time comes from the server's
  clock (TIME, read once). Each limit is read and checked under pcall before its one write, so a
  key of another type leaves that limit as it is (0) and the others are still given back. ]]

local fixed, sliding, bucket = {}, {}, {}

--- @include "give-back-steps"
--- @include "lib/concurrency"

local algorithms = { fixed, sliding, bucket, concurrency }

local reply = {}
for i = 1, #KEYS do
  local p = (i - 1) * 7
  local algorithm = algorithms[tonumber(ARGV[p + 1])]
  local ok, given = pcall(algorithm.giveBack, KEYS[i], tonumber(ARGV[p + 2]), tonumber(ARGV[p + 3]),
    tonumber(ARGV[p + 4]), tonumber(ARGV[p + 5]), ARGV[p + 6], ARGV[p + 7])
  if ok then reply[i] = given else reply[i] = 0 end
end
return reply
