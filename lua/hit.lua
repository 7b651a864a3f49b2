--[[ hit: decide and consume the limits of a batch of hits, each one atomically.
  KEYS     the counters of every limit of every hit: hit after hit, in the order of its rules.
           All keys of one identity carry its hash tag; on a cluster a batch holds the hits of
           one identity only, so all KEYS share one slot
  ARGV     for each hit: its number of limits n, then four values per limit, in KEYS order:
           algorithm, limit, windowMs, cost (algorithm: 1 = FIXED_WINDOW, 2 = SLIDING_WINDOW,
           3 = TOKEN_BUCKET, the order of ALGORITHMS in src/algorithms.ts)
  The TypeScript side of this format is src/stores/hit-script.ts, with the same names.
  Returns  for each hit, in order: allowed, then per limit remaining, resetMs, retryAfterMs.
           allowed is 1 when every limit of the hit passed and all were consumed, 0 when any
           blocked and nothing was written for it. Per limit: units left after the hit (before
           it, when blocked), ms until the limit is whole again, and ms until a hit of this
           cost would pass (0 when it passes now).
  Time comes from the server's clock (TIME, read once per batch), never from a client. Hits
  are decided one after the other, as if they had arrived in that order: each decides every
  limit first (reads only) and writes only when all of them allow, so a blocked hit consumes
  nothing. ]]

local nowUs
local function clockUs()
  if nowUs == nil then
    local t = redis.call('TIME')
    nowUs = tonumber(t[1]) * 1000000 + tonumber(t[2])
  end
  return nowUs
end

local function toMs(us)
  return math.ceil(us / 1000)
end

local function int(x)
  return string.format('%.0f', x)
end

--[[ Each algorithm is a pair over its own key type:
  decide(key, limit, windowMs, cost) -> retryAfterMs, remaining, resetMs, state   (reads only)
  consume(key, limit, windowMs, cost, state, resetMs) -> remaining, resetMs  (writes)
  Values travel as multiple returns, not tables: this runs once per limit of every hit. ]]

--[[ FIXED_WINDOW: a string counter. It opens at the first counted hit, with a TTL of the
  window, so the window resets when the key expires. State: units used. Memory: one small
  string key. ]]
local fixed = {}

function fixed.decide(key, limit, windowMs, cost)
  local used = tonumber(redis.call('GET', key) or 0)
  if used == 0 then return 0, limit, windowMs, 0 end
  local ttl = redis.call('PTTL', key)
  -- in a key's last millisecond PTTL says 0: the window still ends within 1 ms
  if ttl < 0 then ttl = windowMs elseif ttl == 0 then ttl = 1 end
  if used + cost > limit then return ttl, limit - used, ttl, used end
  return 0, limit - used, ttl, used
end

function fixed.consume(key, limit, windowMs, cost, used, resetMs)
  if used == 0 then
    redis.call('SET', key, cost, 'PX', windowMs)
  else
    redis.call('INCRBY', key, cost)
  end
  return limit - used - cost, resetMs
end

--[[ SLIDING_WINDOW: an exact log. A sorted set holds one member per unit taken, scored by
  the server time in microseconds; a unit counts while it is younger than the window, so no
  interval of `window` holds more than `limit` units. State: live units. Memory: up to `limit`
  members. ]]
local sliding = {}

function sliding.decide(key, limit, windowMs, cost)
  local nowUs, windowUs = clockUs(), windowMs * 1000
  local since = '(' .. int(nowUs - windowUs)
  local used = redis.call('ZCOUNT', key, since, '+inf')
  local resetMs = 0
  if used > 0 then
    local newest = redis.call('ZRANGE', key, 0, 0, 'REV', 'WITHSCORES')
    resetMs = toMs(tonumber(newest[2]) + windowUs - nowUs)
  end
  local excess = used + cost - limit
  if excess > 0 then
    -- the hit passes once the excess-th oldest live unit has left the window
    local oldest = redis.call('ZRANGE', key, since, '+inf', 'BYSCORE', 'LIMIT', excess - 1, 1, 'WITHSCORES')
    return toMs(tonumber(oldest[2]) + windowUs - nowUs), limit - used, resetMs, used
  end
  return 0, limit - used, resetMs, used
end

function sliding.consume(key, limit, windowMs, cost, used)
  local nowUs = clockUs()
  redis.call('ZREMRANGEBYSCORE', key, '-inf', int(nowUs - windowMs * 1000))
  -- members are unique: units of one microsecond are numbered after everything still live
  -- (in batches: unpack is bounded by the Lua stack)
  local stamp = int(nowUs)
  local args = {}
  for j = 1, cost do
    args[#args + 1] = stamp
    args[#args + 1] = stamp .. ':' .. (used + j)
    if #args >= 1000 or j == cost then
      redis.call('ZADD', key, unpack(args))
      args = {}
    end
  end
  redis.call('PEXPIRE', key, windowMs)
  return limit - used - cost, windowMs
end

--[[ TOKEN_BUCKET, as GCRA: the key holds the theoretical arrival time (TAT, microseconds)
  at which the bucket would be full again. Each token is one emission interval of
  window/limit; a hit of `cost` passes when TAT + cost intervals stays within one window of
  now. State: the TAT after this hit. The key expires when the bucket is full again.
  Memory: one small string key. ]]
local bucket = {}

function bucket.decide(key, limit, windowMs, cost)
  local nowUs, windowUs = clockUs(), windowMs * 1000
  local interval = windowUs / limit
  local tat = tonumber(redis.call('GET', key) or 0)
  if tat < nowUs then tat = nowUs end
  -- whole microseconds, at least one: tat is ~1.7e15, where a double cannot add a fraction
  local nextTat = tat + math.max(1, math.ceil(cost * interval))
  local remaining = math.floor((nowUs + windowUs - tat) / interval + 1e-9)
  local resetMs = toMs(tat - nowUs)
  if nextTat - nowUs > windowUs then
    return toMs(nextTat - windowUs - nowUs), remaining, resetMs, nextTat
  end
  return 0, remaining, resetMs, nextTat
end

function bucket.consume(key, limit, windowMs, cost, nextTat)
  local nowUs, windowUs = clockUs(), windowMs * 1000
  redis.call('SET', key, int(nextTat), 'PX', toMs(nextTat - nowUs))
  return math.floor((nowUs + windowUs - nextTat) / (windowUs / limit) + 1e-9), toMs(nextTat - nowUs)
end

local algorithms = { fixed, sliding, bucket }

-- per limit of the current hit, reused from hit to hit
local algorithm, limit, windowMs, cost, retryAfterMs, remaining, resetMs, state = {}, {}, {}, {}, {}, {}, {}, {}
local reply, r = {}, 0
local k = 0 -- KEYS taken by earlier hits
local a = 1 -- the ARGV position of this hit's count of limits
while a <= #ARGV do
  local n = tonumber(ARGV[a])
  local allowed = 1
  for i = 1, n do
    local p = a + (i - 1) * 4
    algorithm[i] = algorithms[tonumber(ARGV[p + 1])]
    limit[i], windowMs[i], cost[i] = tonumber(ARGV[p + 2]), tonumber(ARGV[p + 3]), tonumber(ARGV[p + 4])
    retryAfterMs[i], remaining[i], resetMs[i], state[i] = algorithm[i].decide(KEYS[k + i], limit[i], windowMs[i], cost[i])
    if retryAfterMs[i] > 0 then allowed = 0 end
  end

  if allowed == 1 then
    for i = 1, n do
      remaining[i], resetMs[i] = algorithm[i].consume(KEYS[k + i], limit[i], windowMs[i], cost[i], state[i], resetMs[i])
    end
  end

  r = r + 1
  reply[r] = allowed
  for i = 1, n do
    reply[r + 1], reply[r + 2], reply[r + 3] = remaining[i], resetMs[i], retryAfterMs[i]
    r = r + 3
  end
  k = k + n
  a = a + 1 + 4 * n
end
return reply
