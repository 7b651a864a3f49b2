--[[ concurrency: the CONCURRENCY algorithm, calls in flight. One sorted set per identity and
  action holds a member per slot taken, named by the lease token of the hit that took it
  (token:1 to token:cost), scored by when its lease expires: the server's time in us plus the
  lease time (the limit's window). A slot counts while its lease is live; the library renews a
  lease while its call runs (lua/lease.lua) and releases it when the call ends (lua/hit.lua's
  release), so the slot of a process that died frees once its lease expires. Expired leases
  count for nothing and are removed by the next hit that takes a slot. stateA: live slots.
  CONCURRENCY (the contract in lib/algorithms), and the release and renewal of a lease (lib/batch's
  decideBatch and leaseCall). decide, consume and receipt take one more value: the hit's lease token (the data of
  a hit or a take, see lua/hit.lua; false for a peek). Needs lib/clock. ]]

local concurrency = {}

-- the member of the j-th slot of a lease
local function leaseMember(token, j)
  return token .. ':' .. j
end

-- token: the hit's lease token; false for a peek, which takes nothing. A hit without one fails
-- before anything is written: its slot could never be released
function concurrency.decide(key, limit, leaseMs, cost, token)
  if token == nil then error('a CONCURRENCY limit needs a lease token: ' .. key, 0) end
  local nowUs = clockUs()
  local live = '(' .. int(nowUs)
  local used = redis.call('ZCOUNT', key, live, '+inf')
  local resetMs = 0
  if used > 0 then
    local oldest = redis.call('ZRANGE', key, live, '+inf', 'BYSCORE', 'LIMIT', 0, 1, 'WITHSCORES')
    resetMs = toMs(tonumber(oldest[2]) - nowUs)
  end
  local excess = used + cost - limit
  if excess > 0 then
    -- a hit that passes sets the TTL; a blocked one repairs it (see lua/hit.lua)
    local ttl = redis.call('PTTL', key)
    if ttl == -1 or ttl > leaseMs then redis.call('PEXPIRE', key, leaseMs) end
    -- the hit passes once the excess-th oldest live lease has expired (or been released)
    local nth = redis.call('ZRANGE', key, live, '+inf', 'BYSCORE', 'LIMIT', excess - 1, 1, 'WITHSCORES')
    return toMs(tonumber(nth[2]) - nowUs), limit - used, resetMs, used
  end
  return 0, limit - used, resetMs, used
end

-- every lease of the key lasts leaseMs from its take or its last renewal, so the key expires
-- with the newest: leaseMs from now
function concurrency.consume(key, limit, leaseMs, cost, resetMs, used, _, token)
  local nowUs = clockUs()
  redis.call('ZREMRANGEBYSCORE', key, '-inf', int(nowUs))
  local expires = int(nowUs + leaseMs * 1000)
  local args = {}
  for j = 1, cost do
    args[#args + 1] = expires
    args[#args + 1] = leaseMember(token, j)
    if #args >= 1000 or j == cost then
      redis.call('ZADD', key, unpack(args))
      args = {}
    end
  end
  redis.call('PEXPIRE', key, leaseMs)
  if used > 0 then return resetMs end
  return leaseMs
end

-- what a hit took: its token's slots
function concurrency.receipt(key, used, _, token)
  return token, '0'
end

-- removes the first `count` slots of the lease `token` from key: how many were there
function concurrency.release(key, token, count)
  local removed, members = 0, {}
  for j = 1, count do
    members[#members + 1] = leaseMember(token, j)
    if #members >= 1000 or j == count then
      removed = removed + redis.call('ZREM', key, unpack(members))
      members = {}
    end
  end
  return removed
end

-- a part of a hit across hash tags refunds the slots it took, all of them: a slot is one call.
-- Its receipt is the lease token
function concurrency.refund(key, limit, leaseMs, cost, taken, token)
  if concurrency.release(key, token, taken) > 0 then return 1 end
  return 0
end

-- a lease's slots, live again for leaseMs from now; a slot that expired stays free (another hit
-- may have counted it free since), and so does one that was released or reset. How many were
-- renewed
function concurrency.renew(key, token, count, leaseMs)
  local nowUs = clockUs()
  local expires = int(nowUs + leaseMs * 1000)
  local renewed = 0
  for j = 1, count do
    local name = leaseMember(token, j)
    local score = redis.call('ZSCORE', key, name)
    if score and tonumber(score) > nowUs then
      redis.call('ZADD', key, 'XX', expires, name)
      renewed = renewed + 1
    end
  end
  if renewed > 0 then redis.call('PEXPIRE', key, leaseMs) end
  return renewed
end
