--[[ batch: the three calls every entry point runs (lua/hit.lua, lua/refund.lua and lua/lease.lua
  as scripts, lua/library.lua as functions), their contracts in those three files' headers.
  Needs lib/algorithms.
  Deciding reads, under pcall, so that a bad key fails its own hit and not the batch (a script
  error would stop the batch midway, after earlier hits were counted). Its first command on each
  key is a read, so a key of another node fails its hit before anything of that hit is counted,
  and every key a hit writes was read first, so the node serves it. Deciding also checks every
  value the writes will use, so that the writes cannot fail (short of Redis refusing all writes:
  out of memory, a read-only replica, which fails the whole call). The one write deciding may
  make repairs a TTL, of a key it has just read: a counter that lost its TTL (PERSIST, a
  restore, a foreign write), or holds one longer than its window, would lock its identity out
  or never expire. ]]

-- the reply codes, as the headers of lua/hit.lua and lua/refund.lua name them (and
-- src/stores/redis/reply-codes.ts): a call's allowed value, and whether a refund refunded
local ALLOWED, BLOCKED, FAILED, ELSEWHERE = 1, 0, -1, -2
local REFUNDED, KEPT = 1, 0

-- the allowed value and the message of a hit whose key failed: redis.call raises a string
-- (Redis 7.0) or a table with err (later versions)
local function failed(err, key)
  local failure = type(err) == 'table' and tostring(err.err) or tostring(err)
  if not string.find(failure, key, 1, true) then failure = failure .. ': ' .. key end
  -- another node's key (or, on a server stricter than Redis 7, another slot's)
  if string.find(failure, 'non local key', 1, true) or string.find(failure, 'same slot', 1, true) then
    return ELSEWHERE, failure
  end
  return FAILED, failure
end

-- per limit of the current hit, reused from hit to hit, and from call to call where a library
-- outlives its calls (each value is written before it is read): tables made per call are
-- garbage Redis' Lua collects on later calls
local algorithm, limit, windowMs, cost = {}, {}, {}, {}
local retryAfterMs, remaining, resetMs, stateA, stateB, freed = {}, {}, {}, {}, {}, {}
-- the batch's limits, by number
local algorithmOf, limitOf, windowMsOf, costOf = {}, {}, {}, {}

-- the reply of lua/hit.lua's call for `keys` and `argv`
local function decideBatch(keys, argv)
  newCall()
  local reply, replied = {}, 0 -- the reply, and how many values it holds
  local k = 0 -- counters taken by earlier hits (and, in argv, the two values before them)
  local at = 1 -- the argv position of what is read next
  if argv[1] == 'k' then keys, k, at = argv, 2, tonumber(argv[2]) + 3 end

  local limits = tonumber(argv[at])
  for j = 1, limits do
    local p = at + (j - 1) * 4
    algorithmOf[j], limitOf[j] = algorithms[tonumber(argv[p + 1])], tonumber(argv[p + 2])
    windowMsOf[j], costOf[j] = tonumber(argv[p + 3]), tonumber(argv[p + 4])
  end
  at = at + 1 + 4 * limits

  local size = #argv
  while at <= size do
    local kind, n = argv[at], tonumber(argv[at + 1])
    at = at + 2
    local allowed, failure, refunded = ALLOWED, nil, nil
    -- the lease token of a hit or a take that has a CONCURRENCY limit, after its limit numbers
    -- (no other call sends one); a peek takes no slot (false), and a CONCURRENCY limit fails a
    -- hit whose token is '' (it has none), unwritten (lib/concurrency)
    local token, leased = false, false
    if kind == 'hit' or kind == 'take' then
      token = nil
      for i = 0, n - 1 do
        if algorithmOf[tonumber(argv[at + i])] == concurrency then leased = true end
      end
      if leased and argv[at + n] ~= '' then token = argv[at + n] end
    end
    local lone = kind == 'hit' and n == 1 and algorithmOf[tonumber(argv[at])]

    if lone and lone.hit then
      -- a hit of one limit whose algorithm decides and consumes it in fewer commands
      local j, key = tonumber(argv[at]), keys[k + 1]
      local ok, wait, left, reset = pcall(lone.hit, key, limitOf[j], windowMsOf[j], costOf[j])
      if ok then
        retryAfterMs[1], remaining[1], resetMs[1] = wait, left, reset
        if wait > 0 then allowed = BLOCKED end
      else
        allowed, failure = failed(wait, key)
      end
      at = at + 1
    elseif kind == 'release' then
      -- frees the slots its token (after its limit numbers) names on each limit: of one hash tag,
      -- so a key of another node fails the first ZREM, before anything is freed
      local token = argv[at + n]
      for i = 1, n do
        local ok, count = pcall(concurrency.release, keys[k + i], token, costOf[tonumber(argv[at + i - 1])])
        if not ok then
          allowed, failure = failed(count, keys[k + i])
          break
        end
        freed[i] = count
      end
      at = at + n + 1
    elseif kind == 'refund' then
      -- refunds first, then reads the state it left: each refund writes only a key it has read
      -- as its own, so a key it cannot count on is left unwritten and fails the read, as a peek
      -- would fail on it
      local j, key = tonumber(argv[at]), keys[k + 1]
      if n ~= 1 then
        allowed, failure = FAILED, 'a refund names one limit, not ' .. n .. ': ' .. tostring(key)
      else
        algorithm[1], limit[1], windowMs[1] = algorithmOf[j], limitOf[j], windowMsOf[j]
        local ok, done = pcall(algorithm[1].refund, key, limit[1], windowMs[1],
          tonumber(argv[at + 1]), tonumber(argv[at + 2]), argv[at + 3], argv[at + 4])
        refunded = (ok and done) or KEPT
        local read, wait, left, reset = pcall(algorithm[1].decide, key, limit[1], windowMs[1], 0, false)
        if read then
          retryAfterMs[1], remaining[1], resetMs[1] = 0, left, reset
        else
          allowed, failure = failed(wait, key)
        end
      end
      at = at + n + 4 * n
    else
      -- every limit is decided before anything is written
      for i = 1, n do
        local j = tonumber(argv[at + i - 1])
        algorithm[i], limit[i] = algorithmOf[j], limitOf[j]
        windowMs[i], cost[i] = windowMsOf[j], costOf[j]
        local ok, wait, left, reset, sa, sb = pcall(algorithm[i].decide, keys[k + i], limit[i], windowMs[i], cost[i], token)
        if not ok then
          allowed, failure = failed(wait, keys[k + i])
          break
        end
        retryAfterMs[i], remaining[i], resetMs[i], stateA[i], stateB[i] = wait, left, reset, sa, sb
        if wait > 0 then allowed = BLOCKED end
      end
      if allowed == ALLOWED and kind ~= 'peek' then
        for i = 1, n do
          remaining[i] = remaining[i] - cost[i]
          resetMs[i] = algorithm[i].consume(
            keys[k + i], limit[i], windowMs[i], cost[i], resetMs[i], stateA[i], stateB[i], token)
        end
      end
      at = at + n
      if leased then at = at + 1 end
    end

    replied = replied + 1
    reply[replied] = allowed
    if failure then
      replied = replied + 1
      reply[replied] = failure
    elseif kind == 'release' then
      for i = 1, n do
        reply[replied + i] = freed[i]
      end
      replied = replied + n
    else
      for i = 1, n do
        reply[replied + 1], reply[replied + 2], reply[replied + 3] = remaining[i], resetMs[i], retryAfterMs[i]
        replied = replied + 3
      end
      if kind == 'take' and allowed == ALLOWED then
        for i = 1, n do
          reply[replied + 1], reply[replied + 2] = algorithm[i].receipt(keys[k + i], stateA[i], stateB[i], token)
          replied = replied + 2
        end
      elseif kind == 'refund' then
        replied = replied + 1
        reply[replied] = refunded
      end
    end
    k = k + n
  end
  return reply
end

-- the reply of lua/refund.lua's call for `keys` and `argv`
local function refundParts(keys, argv)
  newCall()
  local reply = {}
  for i = 1, #keys do
    local p = (i - 1) * 7
    local algorithm = algorithms[tonumber(argv[p + 1])]
    local ok, refunded = pcall(algorithm.refund, keys[i], tonumber(argv[p + 2]), tonumber(argv[p + 3]),
      tonumber(argv[p + 4]), tonumber(argv[p + 5]), argv[p + 6], argv[p + 7])
    if ok then reply[i] = refunded else reply[i] = KEPT end
  end
  return reply
end

-- the reply of lua/lease.lua's call for `keys` and `argv`
local function leaseCall(keys, argv)
  newCall()
  local kind, token = argv[1], argv[2]
  if kind ~= 'renew' then
    return redis.error_reply('lease: unknown kind ' .. tostring(kind))
  end
  local reply = {}
  for i = 1, #keys do
    reply[i] = concurrency.renew(keys[i], token, tonumber(argv[2 + 2 * i]), tonumber(argv[1 + 2 * i]))
  end
  return reply
end
