--[[ clock: the server's time, read once per call (TIME), and how numbers are written.
  Included by lua/hit.lua and lua/give-back.lua (src/lua.ts expands the include). ]]

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

-- a whole number as Redis and the receipts take it: no exponent, no fraction. Every caller
-- passes a whole number below 2^53, which %d (a C long) writes exactly, at less than half the
-- cost of %.0f
local function int(x)
  return string.format('%d', x)
end
