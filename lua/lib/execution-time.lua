--[[ execution-time: an identity's execution time per window (GitHub's secondary limit on time).
  The key holds "spentUs:atUs": microseconds of execution time charged and not yet restored, as
  of the server's time atUs. Time restores continuously at limitMs per windowMs (a whole window
  restores the whole limit). Unlike the algorithms of lib/algorithms, what is spent may go past
  the limit: an operation charged more than it reserved leaves debt, and the identity's next
  operations wait until the window has restored it. Needs lib/clock. ]]

local executionTime = {}

-- microseconds spent as of now, restored since the key was written
local function spentNow(key, limitMs, windowMs)
  local value = redis.call('GET', key)
  if not value then return 0 end
  local spent, at = string.match(value, '^(%d+):(%d+)$')
  if not spent then error('not an execution time: ' .. key, 0) end
  local left = tonumber(spent) - (clockUs() - tonumber(at)) * limitMs / windowMs
  if left <= 0 then return 0 end
  return math.floor(left)
end

-- ms until `spentUs` has been restored
local function restoreMs(spentUs, limitMs, windowMs)
  return math.ceil(spentUs * windowMs / limitMs / 1000)
end

-- what a state reports: ms left (negative while in debt), ms until whole again
local function timeState(spentUs, limitMs, windowMs)
  local left = limitMs * 1000 - spentUs
  local whole = math.floor(left / 1000)
  return whole, restoreMs(spentUs, limitMs, windowMs)
end

local function writeSpent(key, spentUs, limitMs, windowMs)
  if spentUs <= 0 then
    redis.call('DEL', key)
  else
    local ttl = restoreMs(spentUs, limitMs, windowMs) + 1
    redis.call('SET', key, int(spentUs) .. ':' .. int(clockUs()), 'PX', ttl)
  end
end

-- retryAfterMs, remainingMs, resetMs, spentUs: admitted while the reservation fits in what is left
function executionTime.decide(key, limitMs, windowMs, reserveMs)
  local spent = spentNow(key, limitMs, windowMs)
  local remaining, reset = timeState(spent, limitMs, windowMs)
  local over = spent + reserveMs * 1000 - limitMs * 1000
  if over > 0 then return restoreMs(over, limitMs, windowMs), remaining, reset, spent end
  return 0, remaining, reset, spent
end

-- takes the reservation: resetMs once taken
function executionTime.consume(key, limitMs, windowMs, reserveMs, spent)
  local after = spent + reserveMs * 1000
  writeSpent(key, after, limitMs, windowMs)
  return restoreMs(after, limitMs, windowMs)
end

-- settles an operation: deltaUs (its time less its reservation, penalty included) is charged,
-- or refunded when negative (never below nothing spent). remainingMs, resetMs once settled
function executionTime.settle(key, limitMs, windowMs, deltaUs)
  local spent = spentNow(key, limitMs, windowMs) + deltaUs
  if spent < 0 then spent = 0 end
  writeSpent(key, spent, limitMs, windowMs)
  return timeState(spent, limitMs, windowMs)
end
