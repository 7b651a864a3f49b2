--[[ token-bucket: TOKEN_BUCKET (the contract in lib/algorithms). Needs lib/clock and
  lib/bucket-time. ]]

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
    -- a hit that passes sets the TTL; a blocked one repairs it (see lib/batch)
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

-- the time of the take: what a refund may return shrinks with the time since
function bucket.receipt()
  return int(clockUs()), '0'
end

--[[ TOKEN_BUCKET: receiptA is the time of the take (us). A bucket cannot tell whether a hit since
  found it full (which restarts its time from then and forgets what came before), nor in what
  order other hits refund, so it refunds what it surely still owes: the cost intervals
  refunded, but no more than the taken intervals less the time since the take. That is never
  too much, in any order of refunds: compare the live bucket with one that only the hits
  finally admitted went through, each taking only the units it keeps (taken - cost). The live
  one is ahead by at least the sum, over the hits taken and not yet refunded, of their owed
  amounts. A take adds its term. Time shrinks the lead only while that other bucket is full,
  and then by no more than the time passed; that bucket cannot be full before a hit's kept
  intervals have passed since its take, after which that hit's term shrinks as fast (its term
  is cost intervals until then, taken intervals less the time since, after). A refund
  removes its own term. So a hit that keeps nothing gets back all its tokens less its own round
  trips, a hit that keeps some gets back exactly what it does not keep when the refund comes
  within the time the kept ones take to refill, and nothing comes back once it all had time to
  refill. ]]
function bucket.refund(key, limit, windowMs, cost, taken, takenAt)
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
