--[[ lease: release or renew the slots one call holds on its CONCURRENCY limits.
  KEYS     the CONCURRENCY counters of the call's limits, all of one hash tag (one slot)
  ARGV     op ('release' or 'renew'), the lease token, then per key: leaseMs, slots taken
  The TypeScript side of this format is src/stores/redis/leases.ts, with the same names.
  Returns  per key: the slots released, or renewed (a renewal never brings back a slot whose
           lease expired, was released or was reset: another call may hold it now).
  A release of slots that are gone (expired, reset) removes nothing. Time comes from the server's
  clock (TIME, read once). ]]

--- @include "lib/clock"
--- @include "lib/concurrency"

local op, token = ARGV[1], ARGV[2]
local reply = {}
for i = 1, #KEYS do
  local leaseMs, slots = tonumber(ARGV[1 + 2 * i]), tonumber(ARGV[2 + 2 * i])
  if op == 'release' then
    reply[i] = releaseSlots(KEYS[i], token, slots)
  elseif op == 'renew' then
    reply[i] = renewSlots(KEYS[i], token, slots, leaseMs)
  else
    return redis.error_reply('lease: unknown op ' .. tostring(op))
  end
end
return reply
