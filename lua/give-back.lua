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

--- @include "lib/clock"
--- @include "lib/bucket-time"
--- @include "lib/sliding-member"

--[[ giveBack(key, limit, windowMs, cost, taken, receiptA, receiptB) -> 1 or 0 ]]

--[[ FIXED_WINDOW: receiptA is the window's end in ms. Units of the same window are still in its
  counter, whoever else counted since; a window that opened after ours ends later. ]]
local fixed = {}

function fixed.giveBack(key, limit, windowMs, cost, taken, endsAt)
  if endsAt == '0' then return 0 end
  if redis.call('PEXPIRETIME', key) ~= tonumber(endsAt) then return 0 end
  local used = tonumber(string.match(redis.call('GET', key) or '', '^%d+$'))
  if used == nil or used < cost then return 0 end
  -- an empty window is no window: the next counted hit opens one, as if this hit never came
  if used == cost then
    redis.call('DEL', key)
  else
    redis.call('DECRBY', key, cost)
  end
  return 1
end

--[[ SLIDING_WINDOW: receiptA and receiptB are the stamp and index of the first member added;
  the hit added taken members stamp:index, numbered on, and the first cost of them go. Members
  are unique, so removing exactly them removes no one else's unit (one that has left the window
  counts for nothing anyway). ]]
local sliding = {}

function sliding.giveBack(key, limit, windowMs, cost, taken, stamp, first)
  first = tonumber(first)
  local removed, members = 0, {}
  for j = 0, cost - 1 do
    -- the names hit.lua gave them (lib/sliding-member)
    members[#members + 1] = member(stamp, first + j)
    -- in batches: unpack is bounded by the Lua stack
    if #members >= 1000 or j == cost - 1 then
      removed = removed + redis.call('ZREM', key, unpack(members))
      members = {}
    end
  end
  if removed > 0 then return 1 end
  return 0
end

--[[ TOKEN_BUCKET: receiptA is the time of the take (us). A bucket cannot tell whether a hit since
  found it full (which restarts its time from then and forgets what came before), nor in what
  order other hits give back, so it gives back what it surely still owes: the cost intervals
  given back, but no more than the taken intervals less the time since the take. That is never
  too much, in any order of give-backs: compare the live bucket with one that only the hits
  finally admitted went through, each taking only the units it keeps (taken - cost). The live
  one is ahead by at least the sum, over the hits taken and not yet given back, of their owed
  amounts. A take adds its term. Time shrinks the lead only while that other bucket is full,
  and then by no more than the time passed; that bucket cannot be full before a hit's kept
  intervals have passed since its take, after which that hit's term shrinks as fast (its term
  is cost intervals until then, taken intervals less the time since, after). A give-back
  removes its own term. So a hit that keeps nothing gets back all its tokens less its own round
  trips, a hit that keeps some gets back exactly what it does not keep when the give-back comes
  within the time the kept ones take to refill, and nothing comes back once it all had time to
  refill. ]]
local bucket = {}

function bucket.giveBack(key, limit, windowMs, cost, taken, takenAt)
  local nowUs, windowUs = clockUs(), windowMs * 1000
  local q, r = interval(windowUs, limit)
  local owedUs, owedRem = span(cost, q, r, limit)
  local leftUs, leftRem = span(taken, q, r, limit)
  leftUs = leftUs - (nowUs - tonumber(takenAt))
  if leftUs < owedUs or (leftUs == owedUs and leftRem < owedRem) then
    owedUs, owedRem = leftUs, leftRem
  end
  if owedUs < 0 or (owedUs == 0 and owedRem == 0) then return 0 end
  local value = redis.call('GET', key)
  if not value then return 0 end
  local us, rem = readTat(value, limit)
  if not us then return 0 end
  -- no hit of this limit takes the TAT beyond a window ahead of its time: not ours
  if us > nowUs + windowUs then return 0 end
  us, rem = us - owedUs, rem - owedRem
  if rem < 0 then us, rem = us - 1, rem + limit end
  local dueUs = us
  if rem > 0 then dueUs = us + 1 end
  -- a bucket that is full again is no bucket: the next hit starts one, as if this hit never came
  if dueUs <= nowUs then
    redis.call('DEL', key)
  else
    redis.call('SET', key, tatValue(us, rem), 'PX', toMs(dueUs - nowUs))
  end
  return 1
end

local algorithms = { fixed, sliding, bucket }

local reply = {}
for i = 1, #KEYS do
  local p = (i - 1) * 7
  local algorithm = algorithms[tonumber(ARGV[p + 1])]
  local ok, given = pcall(algorithm.giveBack, KEYS[i], tonumber(ARGV[p + 2]), tonumber(ARGV[p + 3]),
    tonumber(ARGV[p + 4]), tonumber(ARGV[p + 5]), ARGV[p + 6], ARGV[p + 7])
  if ok then reply[i] = given else reply[i] = 0 end
end
return reply
