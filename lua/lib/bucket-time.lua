--[[ bucket-time: a TOKEN_BUCKET's theoretical arrival time (TAT), as lib/token-bucket's consume
  writes it and its refund reads and writes it back, so that neither can misread the other.
  The value is "us:rem": whole microseconds since the epoch, and a remainder in units of
  1/limit us, 0 <= rem < limit (see lib/token-bucket for why). Needs lib/clock (int). ]]

-- one interval of window/limit: q whole us and r/limit us (fmod is exact on doubles)
local function interval(windowUs, limit)
  local r = math.fmod(windowUs, limit)
  return (windowUs - r) / limit, r
end

-- `count` intervals of (q, r): whole us, and a remainder in 1/limit us below limit
local function span(count, q, r, limit)
  local parts = count * r
  local extra = math.fmod(parts, limit)
  return count * q + (parts - extra) / limit, extra
end

-- the TAT a bucket's value holds, as (us, rem); nil for a value no bucket wrote. A TAT in whole
-- microseconds is read as versions before the remainder wrote it; a remainder left by another
-- limit (the directive's limit changed) that is not below this one rounds up to the next us
local function readTat(value, limit)
  local whole, part = string.match(value, '^(%d+):(%d+)$')
  if not whole then whole, part = string.match(value, '^(%d+)$'), '0' end
  if not whole then return nil end
  local us, rem = tonumber(whole), tonumber(part)
  if rem >= limit then return us + 1, 0 end
  return us, rem
end

-- the value that holds the TAT (us, rem), both whole (see int in lib/clock)
local function tatValue(us, rem)
  return string.format('%d:%d', us, rem)
end
