--[[ hit: decide and consume the limits of a batch of hits, each one atomically.
  KEYS     the counters of every limit of every hit: hit after hit, in the order of its rules.
           All keys of one identity carry its hash tag; on a cluster a batch holds the hits of
           one identity only, so all KEYS share one slot
  ARGV     for each hit: its number of limits n, then four values per limit, in KEYS order:
           algorithm, limit, windowMs, cost (algorithm: 1 = FIXED_WINDOW, 2 = SLIDING_WINDOW,
           3 = TOKEN_BUCKET)
  Returns  for each hit, in order: allowed, then per limit remaining, resetMs, retryMs.
           allowed is 1 when every limit of the hit passed and all were consumed, 0 when any
           blocked and nothing was written for it. Per limit: units left after the hit (before
           it, when blocked), ms until the limit is whole again, and ms until a hit of this
           cost would pass (0 when it passes now).
  Time comes from the server's clock (TIME, read once per batch), never from a client. Hits
  are decided one after the other, as if they had arrived in that order: each decides every
  limit first (reads only) and writes only when all of them allow, so a blocked hit consumes
  nothing. Each algorithm is a pair decide/consume over its own key type. ]]

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

--[[ FIXED_WINDOW: a string counter. It opens at the first counted hit, with a TTL of the
  window, so the window resets when the key expires. Memory: one small string key. ]]
local fixed = {}

function fixed.decide(key, limit, windowUs, cost)
  local used = tonumber(redis.call('GET', key) or '0')
  local ttlUs = windowUs
  if used > 0 then
    -- in a key's last millisecond PTTL says 0: the window still ends within 1 ms
    local pttl = redis.call('PTTL', key)
    if pttl >= 0 then ttlUs = math.max(pttl, 1) * 1000 end
  end
  local d = { used = used, remaining = limit - used, resetMs = toMs(ttlUs), retryMs = 0 }
  if used + cost > limit then d.retryMs = toMs(ttlUs) end
  return d
end

function fixed.consume(key, d, limit, windowUs, cost)
  if d.used == 0 then
    redis.call('SET', key, cost, 'PX', toMs(windowUs))
    d.resetMs = toMs(windowUs)
  else
    redis.call('INCRBY', key, cost)
  end
  d.remaining = limit - d.used - cost
end

--[[ SLIDING_WINDOW: an exact log. A sorted set holds one member per unit taken, scored by
  the server time in microseconds; a unit counts while it is younger than the window, so no
  interval of `window` holds more than `limit` units. Memory: up to `limit` members. ]]
local sliding = {}

function sliding.decide(key, limit, windowUs, cost)
  local nowUs = clockUs()
  local since = nowUs - windowUs
  local used = redis.call('ZCOUNT', key, '(' .. int(since), '+inf')
  local d = { since = since, used = used, remaining = limit - used, resetMs = 0, retryMs = 0 }
  if used > 0 then
    local newest = redis.call('ZRANGE', key, 0, 0, 'REV', 'WITHSCORES')
    d.resetMs = toMs(tonumber(newest[2]) + windowUs - nowUs)
  end
  local excess = used + cost - limit
  if excess > 0 then
    -- the hit passes once the excess-th oldest live unit has left the window
    local oldest = redis.call('ZRANGE', key, '(' .. int(since), '+inf', 'BYSCORE', 'LIMIT', excess - 1, 1, 'WITHSCORES')
    d.retryMs = toMs(tonumber(oldest[2]) + windowUs - nowUs)
  end
  return d
end

function sliding.consume(key, d, limit, windowUs, cost)
  local nowUs = clockUs()
  redis.call('ZREMRANGEBYSCORE', key, '-inf', int(d.since))
  -- members are unique: units of one microsecond are numbered after everything still live
  -- (in batches: unpack is bounded by the Lua stack)
  local stamp = int(nowUs)
  local args = {}
  for j = 1, cost do
    args[#args + 1] = stamp
    args[#args + 1] = stamp .. ':' .. (d.used + j)
    if #args >= 1000 or j == cost then
      redis.call('ZADD', key, unpack(args))
      args = {}
    end
  end
  redis.call('PEXPIRE', key, toMs(windowUs))
  d.remaining = limit - d.used - cost
  d.resetMs = toMs(windowUs)
end

--[[ TOKEN_BUCKET, as GCRA: the key holds the theoretical arrival time (TAT, microseconds)
  at which the bucket would be full again. Each token is one emission interval of
  window/limit; a hit of `cost` passes when TAT + cost intervals stays within one window of
  now. The key expires when the bucket is full again. Memory: one small string key. ]]
local bucket = {}

function bucket.decide(key, limit, windowUs, cost)
  local nowUs = clockUs()
  local interval = windowUs / limit
  local tat = tonumber(redis.call('GET', key) or '0')
  if tat < nowUs then tat = nowUs end
  -- whole microseconds, at least one: tat is ~1.7e15, where a double cannot add a fraction
  local nextTat = tat + math.max(1, math.ceil(cost * interval))
  local d = {
    nextTat = nextTat,
    remaining = math.floor((nowUs + windowUs - tat) / interval + 1e-9),
    resetMs = toMs(tat - nowUs),
    retryMs = 0,
  }
  if nextTat - nowUs > windowUs then d.retryMs = toMs(nextTat - windowUs - nowUs) end
  return d
end

function bucket.consume(key, d, limit, windowUs, cost)
  local nowUs = clockUs()
  local interval = windowUs / limit
  redis.call('SET', key, int(d.nextTat), 'PX', toMs(d.nextTat - nowUs))
  d.remaining = math.floor((nowUs + windowUs - d.nextTat) / interval + 1e-9)
  d.resetMs = toMs(d.nextTat - nowUs)
end

local algorithms = { fixed, sliding, bucket }

local reply = {}
local k = 0 -- KEYS consumed by earlier hits
local a = 1 -- the ARGV position of this hit's count of limits
while a <= #ARGV do
  local n = tonumber(ARGV[a])
  local decisions = {}
  local allowed = 1
  for i = 1, n do
    local p = a + (i - 1) * 4
    local d = algorithms[tonumber(ARGV[p + 1])].decide(KEYS[k + i], tonumber(ARGV[p + 2]),
      tonumber(ARGV[p + 3]) * 1000, tonumber(ARGV[p + 4]))
    if d.retryMs > 0 then allowed = 0 end
    decisions[i] = d
  end

  if allowed == 1 then
    for i = 1, n do
      local p = a + (i - 1) * 4
      algorithms[tonumber(ARGV[p + 1])].consume(KEYS[k + i], decisions[i], tonumber(ARGV[p + 2]),
        tonumber(ARGV[p + 3]) * 1000, tonumber(ARGV[p + 4]))
    end
  end

  reply[#reply + 1] = allowed
  for i = 1, n do
    local d = decisions[i]
    reply[#reply + 1] = d.remaining
    reply[#reply + 1] = d.resetMs
    reply[#reply + 1] = d.retryMs
  end
  k = k + n
  a = a + 1 + 4 * n
end
return reply
