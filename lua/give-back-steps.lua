--[[ give-back-steps: how each algorithm gives back what a hit took, included (see src/lua.ts)
  by lua/give-back.lua and by lua/hit.lua (whose batches give back a budget's unused points).
  The including script defines, before this, the tables fixed, sliding and bucket. ]]

--- @include "lib/clock"
--- @include "lib/bucket-time"
--- @include "lib/sliding-member"

--[[ giveBack(key, limit, windowMs, cost, taken, receiptA, receiptB) -> 1 or 0 ]]

--[[ FIXED_WINDOW: receiptA is the window's end in ms. Units of the same window are still in its
  counter, whoever else counted since; a window that opened after ours ends later. ]]
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
function sliding.giveBack(key, limit, windowMs, cost, taken, stamp, first)
  first = tonumber(first)
  local removed, members = 0, {}
  for j = 0, cost - 1 do
    -- the same expression as hit.lua's, so the same member names
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
