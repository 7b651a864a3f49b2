--[[ hit: decide and consume the limits of a batch of hits, each one atomically.
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
           src/rate-limit-rule.ts); then for each hit: its number of limits n (negative for a
           peek: decided, never written, so its state is read and nothing is counted; 'r' and n
           for a hit that also returns receipts; 'l' and n, or 'rl' and n, for a hit that takes
           slots of CONCURRENCY limits, whose lease token follows its limit numbers; 'g1' for a
           give-back, which names one limit), then n limit
           numbers (1 to m), in the counters' order, and for a give-back four values: units,
           taken, receiptA, receiptB, as lua/give-back.lua takes them (an operation's cost
           budget gives back what it did not use in the same batches as the hits, and reads its
           state there; a give-back of another n fails, -1, unwritten). Hits share
           a few limits, which are sent and read once per batch: reading four values per limit
           of every hit was a good part of what a limit cost (see BENCHMARKS.md).
  The TypeScript side of this format is src/stores/redis/hit-script.ts, with the same names.
  Returns  for each hit, in order: allowed, then either per limit remaining, resetMs,
           retryAfterMs, or, when allowed is negative, one error message; and, for a hit that
           asked for receipts and passed, then per limit two values that name exactly what it
           took (see receipt below), for lua/give-back.lua to give back. A give-back answers
           allowed 1 and its limit's state once given back (retryAfterMs 0), then 1 when its
           units were given back, 0 when nothing was (see lua/give-back.lua).
           allowed is 1 when every limit of the hit passed and all were consumed, 0 when any
           blocked and nothing was written for it, -1 when a key of the hit could not be read
           as its counter (a key of another type, or a value this script never writes, put
           there by someone else), -2 when a key of the hit is served by another node (the
           client's slot map is stale, a slot is being moved): either way nothing was counted
           for that hit, and the other hits of the batch are decided as if it were not there.
           Per limit: units left after the hit (before it, when blocked), ms until the limit is
           whole again, and ms until a hit of this cost would pass (0 when it passes now).
  Time comes from the server's clock (TIME, read once per batch), never from a client. Hits
  are decided one after the other, as if they had arrived in that order: each decides every
  limit first and writes only when all of them allow, so a blocked hit consumes nothing.
  Deciding reads, under pcall, so that a bad key fails its own hit and not the batch (a script
  error would stop the batch midway, after earlier hits were counted). Its first command on each
  key is a read, so a key of another node fails its hit before anything of that hit is counted,
  and every key a hit writes was read first, so the node serves it. Deciding also checks every
  value the writes will use, so that the writes cannot fail (short of Redis refusing all writes:
  out of memory, a read-only replica, which fails the whole call). The one write deciding may
  make repairs a TTL, of a key it has just read: a counter that lost its TTL (PERSIST, a
  restore, a foreign write), or holds one longer than its window, would lock its identity out
  or never expire. ]]

--- @include "lib/clock"
--- @include "lib/bucket-time"
--- @include "lib/sliding-member"
--- @include "lib/concurrency"

--[[ Each algorithm is a pair over its own key type:
  decide(key, limit, windowMs, cost) -> retryAfterMs, remaining, resetMs, stateA, stateB
    (reads, and repairs the TTL; raises an error for a key it cannot count on)
  consume(key, limit, windowMs, cost, resetMs, stateA, stateB) -> resetMs  (writes)
  stateA and stateB are the algorithm's state for consume, as decide found it. A hit that passes leaves
  remaining - cost units, in every algorithm (for the bucket: floor(x - cost) = floor(x) - cost).
  Values travel as multiple returns, not tables: this runs once per limit of every hit. ]]

--[[ FIXED_WINDOW: a string counter. It opens at the first counted hit, with a TTL of the
  window, so the window resets when the key expires. stateA: units used. Memory: one small
  string key. ]]
local fixed = {}

function fixed.decide(key, limit, windowMs, cost)
  local value = redis.call('GET', key)
  if not value then return 0, limit, windowMs, 0 end
  -- INCRBY takes a whole number only
  if not string.match(value, '^%d+$') then error('not a FIXED_WINDOW counter: ' .. key, 0) end
  local used = tonumber(value)
  local ttl = redis.call('PTTL', key)
  if ttl < 0 or ttl > windowMs then
    redis.call('PEXPIRE', key, windowMs)
    ttl = windowMs
  elseif ttl == 0 then
    -- in a key's last millisecond PTTL says 0: the window still ends within 1 ms
    ttl = 1
  end
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

--[[ SLIDING_WINDOW: an exact log. A sorted set holds one member per unit taken, scored by
  the server time in microseconds; a unit counts while it is younger than the window, so no
  interval of `window` holds more than `limit` units. stateA: live units. Memory: up to `limit`
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
    -- a hit that passes sets the TTL; a blocked one repairs it (see the header)
    local ttl = redis.call('PTTL', key)
    if ttl == -1 or ttl > windowMs then redis.call('PEXPIRE', key, math.max(resetMs, 1)) end
    -- the hit passes once the excess-th oldest live unit has left the window
    local oldest = redis.call('ZRANGE', key, since, '+inf', 'BYSCORE', 'LIMIT', excess - 1, 1, 'WITHSCORES')
    return toMs(tonumber(oldest[2]) + windowUs - nowUs), limit - used, resetMs, used
  end
  return 0, limit - used, resetMs, used
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

--[[ TOKEN_BUCKET, as GCRA: the key holds the theoretical arrival time (TAT) at which the
  bucket would be full again. Each token is one emission interval of window/limit; a hit of
  `cost` passes when TAT + cost intervals stays within one window of now, so a full bucket lets
  exactly `limit` tokens through at once. The key expires when the bucket is full again.
  stateA, stateB: the TAT after this hit, as us and rem (below). Memory: one small string key.
  Exact time: an interval is seldom a whole number of microseconds (3 per second is 333333.33
  us), and rounding it up on every hit would let only limit - 1 tokens through a full bucket.
  So the TAT is kept exactly, as "us:rem" (lib/bucket-time): whole microseconds since the epoch,
  and a remainder in units of 1/limit us, 0 <= rem < limit. An interval is q us and r/limit us
  (q and r: window in us divided by limit, the only meaning of r in this script), and every sum
  and product below stays an integer under 2^53, which a Lua number (a double) holds exactly:
  the clock is ~1.8e15 us, and a count of intervals times r stays under limit^2, which
  src/rate-limit-rule.ts keeps under 2^53. ]]
local bucket = {}

-- the time (us, rem) plus `count` intervals of (q, r)
local function advance(us, rem, count, q, r, limit)
  local whole, extra = span(count, q, r, limit)
  us, rem = us + whole, rem + extra
  if rem >= limit then return us + 1, rem - limit end
  return us, rem
end

-- the first whole microsecond at or after (us, rem)
local function ceilUs(us, rem)
  if rem > 0 then return us + 1 end
  return us
end

-- whether `count` intervals after (us, rem) still end by `untilUs`
local function fits(count, untilUs, us, rem, q, r, limit)
  return ceilUs(advance(us, rem, count, q, r, limit)) <= untilUs
end

-- whole tokens left once the TAT is (us, rem), counted interval by interval: an estimate within
-- one of the count, made exact by the integer comparisons of fits
local function countTokens(nowUs, windowUs, us, rem, q, r, limit)
  local untilUs = nowUs + windowUs
  local n = math.floor((untilUs - us - rem / limit) / windowUs * limit)
  if n < 0 then n = 0 elseif n > limit then n = limit end
  while n < limit and fits(n + 1, untilUs, us, rem, q, r, limit) do n = n + 1 end
  while n > 0 and not fits(n, untilUs, us, rem, q, r, limit) do n = n - 1 end
  return n
end

-- the same count in one division. n intervals after (us, rem) end by untilUs when
-- rem + n * windowUs <= (untilUs - us) * limit (in 1/limit us); below 2^52 every term is exact in
-- a Lua number, n * windowUs included, and a quotient rounded up to the next whole number is
-- taken back down. Beyond (long windows of many tokens), countTokens. us <= untilUs: the
-- caller never lets the TAT run more than a window ahead
local EXACT = 4503599627370496
local function tokens(nowUs, windowUs, us, rem, q, r, limit)
  local room = (nowUs + windowUs - us) * limit
  if room > EXACT then return countTokens(nowUs, windowUs, us, rem, q, r, limit) end
  room = room - rem
  if room < 0 then return 0 end
  local n = math.floor(room / windowUs)
  if n * windowUs > room then n = n - 1 end
  if n > limit then return limit end
  return n
end

function bucket.decide(key, limit, windowMs, cost)
  local nowUs, windowUs = clockUs(), windowMs * 1000
  local q, r = interval(windowUs, limit)
  local us, rem = 0, 0
  local value = redis.call('GET', key)
  if value then
    us, rem = readTat(value, limit)
    if not us then error('not a TOKEN_BUCKET time: ' .. key, 0) end
  end
  if us < nowUs then
    us, rem = nowUs, 0
  elseif us > nowUs + windowUs then
    -- no hit of this limit takes the TAT beyond a window ahead of its time: not ours
    us, rem = nowUs + windowUs, 0
  end
  local nextUs, nextRem = advance(us, rem, cost, q, r, limit)
  local remaining = tokens(nowUs, windowUs, us, rem, q, r, limit)
  local resetMs = toMs(ceilUs(us, rem) - nowUs)
  local over = ceilUs(nextUs, nextRem) - nowUs - windowUs
  if over > 0 then
    -- a hit that passes sets the TTL; a blocked one repairs it (see the header)
    local ttl = redis.call('PTTL', key)
    if ttl == -1 or ttl > windowMs then redis.call('PEXPIRE', key, math.max(resetMs, 1)) end
    return toMs(over), remaining, resetMs, nextUs, nextRem
  end
  return 0, remaining, resetMs, nextUs, nextRem
end

function bucket.consume(key, limit, windowMs, cost, resetMs, nextUs, nextRem)
  local ttlMs = toMs(ceilUs(nextUs, nextRem) - clockUs())
  redis.call('SET', key, tatValue(nextUs, nextRem), 'PX', ttlMs)
  return ttlMs
end

--[[ receipt(key, a, b) -> two strings that name what the hit just consumed on key, a and b
  being the state decide found. A hit on several hash tags of a cluster is decided part by
  part (src/stores/redis/across-tags.ts), and a part taken before another part blocked is given back
  by lua/give-back.lua, which must never give units to a window, log or bucket the hit did not
  take from. Asked for only by those parts, so other hits pay nothing for them. ]]

-- the window's end in ms since the epoch: a later window of the key opens after this one ends,
-- so it ends at least a window later and cannot share it. PEXPIRETIME is Redis 7.0+: without it,
-- '0', no receipt, and the units stay until the window ends
function fixed.receipt(key)
  local at = redis.pcall('PEXPIRETIME', key)
  if type(at) ~= 'number' then return '0', '0' end
  return int(at), '0'
end

-- the members added: stamp:first to stamp:(first + cost - 1), unique, so removing exactly them
-- removes no one else's unit
function sliding.receipt(key, used)
  return int(clockUs()), int(used + 1)
end

-- the time of the take: what the give-back may return shrinks with the time since
function bucket.receipt()
  return int(clockUs()), '0'
end

--- @include "give-back-steps"

local algorithms = { fixed, sliding, bucket, concurrency }

-- per limit of the current hit, reused from hit to hit
local algorithm, limit, windowMs, cost = {}, {}, {}, {}
local retryAfterMs, remaining, resetMs, stateA, stateB = {}, {}, {}, {}, {}
local reply, replied = {}, 0 -- the reply, and how many values it holds
local keys = KEYS -- the counters: this hit's i-th is keys[k + i]
local k = 0 -- counters taken by earlier hits (and, in ARGV, the two values before them)
local at = 1 -- the ARGV position of what is read next
if ARGV[1] == 'k' then keys, k, at = ARGV, 2, tonumber(ARGV[2]) + 3 end

-- the batch's limits, by number
local limits = tonumber(ARGV[at])
local algorithmOf, limitOf, windowMsOf, costOf = {}, {}, {}, {}
for j = 1, limits do
  local p = at + (j - 1) * 4
  algorithmOf[j], limitOf[j] = algorithms[tonumber(ARGV[p + 1])], tonumber(ARGV[p + 2])
  windowMsOf[j], costOf[j] = tonumber(ARGV[p + 3]), tonumber(ARGV[p + 4])
end
at = at + 1 + 4 * limits

-- the allowed value and the message of a hit whose key failed (see the header): redis.call
-- raises a string (Redis 7.0) or a table with err (later versions)
local function failed(err, key)
  local failure = type(err) == 'table' and tostring(err.err) or tostring(err)
  if not string.find(failure, key, 1, true) then failure = failure .. ': ' .. key end
  -- another node's key (or, on a server stricter than Redis 7, another slot's)
  if string.find(failure, 'non local key', 1, true) or string.find(failure, 'same slot', 1, true) then
    return -2, failure
  end
  return -1, failure
end

while at <= #ARGV do
  local n = tonumber(ARGV[at])
  local kind = nil
  if n == nil then
    local count
    kind, count = string.match(ARGV[at], '^(%a+)(%d+)$')
    n = tonumber(count)
  end
  local receipts, giveBack = kind == 'r' or kind == 'rl', kind == 'g'
  local peek = n < 0
  if n < 0 then n = -n end
  -- the hit's lease token (lib/concurrency); false for a peek, which takes no slot
  local token = nil
  if kind == 'l' or kind == 'rl' then token = ARGV[at + n + 1] elseif peek then token = false end
  local allowed, failure = 1, nil
  local given = nil

  if giveBack then
    -- a give-back (of one limit: a budget's) gives back first, then reads the state it left:
    -- each giveBack writes only a key it has read as its own, so a key it cannot count on is
    -- left unwritten and fails the read, as a peek would fail on it
    local j, key = tonumber(ARGV[at + 1]), keys[k + 1]
    if n ~= 1 then
      allowed, failure = -1, 'a give-back names one limit, not ' .. n .. ': ' .. tostring(key)
    else
      algorithm[1], limit[1], windowMs[1] = algorithmOf[j], limitOf[j], windowMsOf[j]
      local ok, done = pcall(algorithm[1].giveBack, key, limit[1], windowMs[1],
        tonumber(ARGV[at + 2]), tonumber(ARGV[at + 3]), ARGV[at + 4], ARGV[at + 5])
      given = (ok and done) or 0
      local read, wait, left, reset = pcall(algorithm[1].decide, key, limit[1], windowMs[1], 0, false)
      if read then
        retryAfterMs[1], remaining[1], resetMs[1] = 0, left, reset
      else
        allowed, failure = failed(wait, key)
      end
    end
  else
    -- every limit is decided before anything is written
    for i = 1, n do
      local j = tonumber(ARGV[at + i])
      algorithm[i], limit[i] = algorithmOf[j], limitOf[j]
      windowMs[i], cost[i] = windowMsOf[j], costOf[j]
      local ok, wait, left, reset, sa, sb = pcall(algorithm[i].decide, keys[k + i], limit[i], windowMs[i], cost[i], token)
      if not ok then
        allowed, failure = failed(wait, keys[k + i])
        break
      end
      retryAfterMs[i], remaining[i], resetMs[i], stateA[i], stateB[i] = wait, left, reset, sa, sb
      if wait > 0 then allowed = 0 end
    end

    if allowed == 1 and not peek then
      for i = 1, n do
        remaining[i] = remaining[i] - cost[i]
        resetMs[i] = algorithm[i].consume(
          keys[k + i], limit[i], windowMs[i], cost[i], resetMs[i], stateA[i], stateB[i], token)
      end
    end
  end

  replied = replied + 1
  reply[replied] = allowed
  if failure then
    replied = replied + 1
    reply[replied] = failure
  else
    for i = 1, n do
      reply[replied + 1], reply[replied + 2], reply[replied + 3] = remaining[i], resetMs[i], retryAfterMs[i]
      replied = replied + 3
    end
    if receipts and allowed == 1 and not peek then
      for i = 1, n do
        reply[replied + 1], reply[replied + 2] = algorithm[i].receipt(keys[k + i], stateA[i], stateB[i], token)
        replied = replied + 2
      end
    end
    if giveBack then
      replied = replied + 1
      reply[replied] = given
    end
  end
  k = k + n
  at = at + 1 + n
  if giveBack then at = at + 4 * n end
  if token then at = at + 1 end
end
return reply
