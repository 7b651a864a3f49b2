--[[ clock: the server's time, read once per call (TIME), and how numbers are written.
  Included through lib/algorithms (src/stores/redis/lua-loader.ts expands the include). Every entry point calls
  newCall first: in a function library this chunk runs once, when it is loaded, and its values
  outlive a call. ]]

local nowUs

-- forgets the time of the previous call
local function newCall()
  nowUs = nil
end
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

-- a whole number as Redis and the receipts take it: no exponent, no fraction. Every caller
-- passes a whole number below 2^53, which %d (a C long) writes exactly, at less than half the
-- cost of %.0f
local function int(x)
  return string.format('%d', x)
end
