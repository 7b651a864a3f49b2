--[[ hit: decide and consume every limit of one field atomically.
  KEYS[i]  the counter of limit i; all KEYS carry the identity's hash tag, so one slot
  ARGV     four values per limit, in KEYS order: algorithm, limit, windowMs, cost
           algorithm: 1 = FIXED_WINDOW
  Returns  {allowed, remaining_1, resetMs_1, retryMs_1, remaining_2, ...}
           allowed is 1 when every limit passed and all were consumed, 0 when any blocked
           and nothing was written. Per limit: units left after this hit, ms until the
           limit is whole again, and ms until a hit of this cost would pass (0 if it passes).
  Time comes from the server's clock (TIME), never from a client. The frame decides every
  limit first and writes only when all of them allow, so a blocked hit consumes nothing. ]]

local clock = redis.call('TIME')
local nowMs = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)

-- FIXED_WINDOW: a counter that opens at the first counted hit and expires windowMs later.
local fixed = {}

function fixed.decide(key, limit, windowMs, cost)
  local used = tonumber(redis.call('GET', key) or '0')
  local ttl = windowMs
  if used > 0 then
    ttl = redis.call('PTTL', key)
    if ttl < 0 then ttl = windowMs end
  end
  local d = { used = used, ttl = ttl, remaining = limit - used, resetMs = ttl, retryMs = 0 }
  if used + cost > limit then d.retryMs = ttl end
  return d
end

function fixed.consume(key, d, limit, windowMs, cost)
  if d.used == 0 then
    redis.call('SET', key, cost, 'PX', windowMs)
  else
    redis.call('INCRBY', key, cost)
  end
  d.remaining = limit - d.used - cost
end

local algorithms = { fixed }

local n = #KEYS
local decisions = {}
local allowed = 1
for i = 1, n do
  local a = (i - 1) * 4
  local algorithm = algorithms[tonumber(ARGV[a + 1])]
  local d = algorithm.decide(KEYS[i], tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4]))
  if d.retryMs > 0 then allowed = 0 end
  decisions[i] = d
end

if allowed == 1 then
  for i = 1, n do
    local a = (i - 1) * 4
    algorithms[tonumber(ARGV[a + 1])].consume(KEYS[i], decisions[i], tonumber(ARGV[a + 2]),
      tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4]))
  end
end

local reply = { allowed }
for i = 1, n do
  local d = decisions[i]
  reply[#reply + 1] = d.remaining
  reply[#reply + 1] = d.resetMs
  reply[#reply + 1] = d.retryMs
end
return reply
