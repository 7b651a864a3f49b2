--[[ sliding-window: SLIDING_WINDOW (the contract in lib/algorithms). Needs lib/clock and
  lib/sliding-member. ]]

--[[ SLIDING_WINDOW: an exact log. A sorted set holds one member per unit taken, scored by
  the server time in microseconds; a unit counts while it is younger than the window, so no
  interval of `window` holds more than `limit` units. stateA: live units. Memory: up to `limit`
  members. ]]
local sliding = {}

-- the decision once the live units are counted: used of them since `since`
local function judge(key, limit, windowMs, cost, nowUs, windowUs, since, used)
  local resetMs = 0
  if used > 0 then
    local newest = redis.call('ZRANGE', key, 0, 0, 'REV', 'WITHSCORES')
    resetMs = toMs(tonumber(newest[2]) + windowUs - nowUs)
  end
  local excess = used + cost - limit
  if excess > 0 then
    -- a hit that passes sets the TTL; a blocked one repairs it (see lib/batch)
    local ttl = redis.call('PTTL', key)
    if ttl == -1 or ttl > windowMs then redis.call('PEXPIRE', key, math.max(resetMs, 1)) end
    -- the hit passes once the excess-th oldest live unit has left the window
    local oldest = redis.call('ZRANGE', key, since, '+inf', 'BYSCORE', 'LIMIT', excess - 1, 1, 'WITHSCORES')
    return toMs(tonumber(oldest[2]) + windowUs - nowUs), limit - used, resetMs, used
  end
  return 0, limit - used, resetMs, used
end

function sliding.decide(key, limit, windowMs, cost)
  local nowUs, windowUs = clockUs(), windowMs * 1000
  local since = '(' .. int(nowUs - windowUs)
  local used = redis.call('ZCOUNT', key, since, '+inf')
  return judge(key, limit, windowMs, cost, nowUs, windowUs, since, used)
end

function sliding.consume(key, limit, windowMs, cost, resetMs, used)
  local nowUs = clockUs()
  redis.call('ZREMRANGEBYSCORE', key, '-inf', int(nowUs - windowMs * 1000))
  -- members are unique: units of one microsecond are numbered after everything still live
  -- (in batches: unpack is bounded by the Lua stack)
  local stamp = int(nowUs)
  local args = {}
  for j = 1, cost do
    args[#args + 1] = stamp
    args[#args + 1] = member(stamp, used + j)
    if #args >= 1000 or j == cost then
      redis.call('ZADD', key, unpack(args))
      args = {}
    end
  end
  redis.call('PEXPIRE', key, windowMs)
  return windowMs
end

-- a hit of this one limit: one that passes needs no read of the newest unit (its own is newest,
-- the log whole again a window from now, as consume answers), one command less than decide then
-- consume
function sliding.hit(key, limit, windowMs, cost)
  local nowUs, windowUs = clockUs(), windowMs * 1000
  local since = '(' .. int(nowUs - windowUs)
  local used = redis.call('ZCOUNT', key, since, '+inf')
  if used + cost > limit then
    local wait, left, reset = judge(key, limit, windowMs, cost, nowUs, windowUs, since, used)
    return wait, left, reset
  end
  return 0, limit - used - cost, sliding.consume(key, limit, windowMs, cost, 0, used)
end

-- the members added: stamp:first to stamp:(first + cost - 1), unique, so removing exactly them
-- removes no one else's unit
function sliding.receipt(key, used)
  return int(clockUs()), int(used + 1)
end

--[[ SLIDING_WINDOW: receiptA and receiptB are the stamp and index of the first member added;
  the hit added taken members stamp:index, numbered on, and the first cost of them go. Members
  are unique, so removing exactly them removes no one else's unit (one that has left the window
  counts for nothing anyway). ]]
function sliding.refund(key, limit, windowMs, cost, taken, stamp, first)
  first = tonumber(first)
  local removed, members = 0, {}
  for j = 0, cost - 1 do
    -- the same expression as lib/sliding-window's consume, so the same member names
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
