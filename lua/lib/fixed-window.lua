--[[ fixed-window: FIXED_WINDOW, as every algorithm a fragment (lib/algorithms dispatches):
  decide(key, limit, windowMs, cost) -> retryAfterMs, remaining, resetMs, stateA, stateB
  consume(key, limit, windowMs, cost, resetMs, stateA, stateB) -> resetMs
  hit(key, limit, windowMs, cost) -> retryAfterMs, remaining, resetMs
  receipt(key, stateA, stateB) -> two strings naming what a hit that passed took
  refund(key, limit, windowMs, cost, taken, receiptA, receiptB) -> 1 or 0
  (the contract of each is in lib/algorithms). Needs lib/clock. ]]

--[[ FIXED_WINDOW: a string counter. It opens at the first counted hit, with a TTL of the
  window, so the window resets when the key expires. stateA: units used. Memory: one small
  string key. ]]
local fixed = {}

-- ms until the window of a counter that exists ends, its TTL repaired first when it has none
-- or one longer than the window
local function windowLeft(key, windowMs)
  local ttl = redis.call('PTTL', key)
  if ttl < 0 or ttl > windowMs then
    redis.call('PEXPIRE', key, windowMs)
    return windowMs
  end
  -- in a key's last millisecond PTTL says 0: the window still ends within 1 ms
  if ttl == 0 then return 1 end
  return ttl
end

function fixed.decide(key, limit, windowMs, cost)
  local value = redis.call('GET', key)
  if not value then return 0, limit, windowMs, 0 end
  -- INCRBY takes a whole number only
  if not string.match(value, '^%d+$') then error('not a FIXED_WINDOW counter: ' .. key, 0) end
  local used = tonumber(value)
  local ttl = windowLeft(key, windowMs)
  if used == 0 then return 0, limit, ttl, 0 end
  if used + cost > limit then return ttl, limit - used, ttl, used end
  return 0, limit - used, ttl, used
end

function fixed.consume(key, limit, windowMs, cost, resetMs, used)
  if used == 0 then
    redis.call('SET', key, cost, 'PX', windowMs)
  else
    redis.call('INCRBY', key, cost)
  end
  return resetMs
end

--[[ A hit of this one limit increments first, as the minimal fixed window does: INCRBY, then
  PEXPIRE when the hit opened the window, else PTTL for its end (and the same repair of a TTL
  as decide). A hit over the limit takes its units back with DECRBY before the call ends:
  nobody sees the count in between (a script runs alone), so a blocked hit leaves the counter
  as it found it, its TTL included (INCRBY and DECRBY keep a TTL). INCRBY refuses a key that
  holds no whole number, unwritten; one below zero, which no hit writes, is put back and
  refused. Two or three commands where decide and consume run three. ]]
function fixed.hit(key, limit, windowMs, cost)
  local used = redis.call('INCRBY', key, cost)
  if used < cost then
    redis.call('DECRBY', key, cost)
    error('not a FIXED_WINDOW counter: ' .. key, 0)
  end
  local ttl = windowMs
  if used == cost then
    redis.call('PEXPIRE', key, windowMs)
  else
    ttl = windowLeft(key, windowMs)
  end
  if used > limit then
    redis.call('DECRBY', key, cost)
    return ttl, limit - used + cost, ttl
  end
  return 0, limit - used, ttl
end

-- the window's end in ms since the epoch: a later window of the key opens after this one ends,
-- so it ends at least a window later and cannot share it. PEXPIRETIME is Redis 7.0+: without it,
-- '0', no receipt, and the units stay until the window ends
function fixed.receipt(key)
  local at = redis.pcall('PEXPIRETIME', key)
  if type(at) ~= 'number' then return '0', '0' end
  return int(at), '0'
end

--[[ FIXED_WINDOW: receiptA is the window's end in ms. Units of the same window are still in its
  counter, whoever else counted since; a window that opened after ours ends later. ]]
function fixed.refund(key, limit, windowMs, cost, taken, endsAt)
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
