--[[ operation: the two calls of one GraphQL operation with secondary limits (lua/operation.lua's
  contract): admit decides the cost budget, the execution time and the in-flight slot together
  and takes all of them or none; settle gives back what the budget did not use, charges the
  time the operation took and releases its slot, in one step. Needs lib/algorithms and
  lib/execution-time. ]]

-- the reply of lua/operation.lua's call for `keys` and `argv`
local function operationCall(keys, argv)
  newCall()
  local kind, token = argv[1], argv[2]
  if kind ~= 'admit' and kind ~= 'settle' then
    return redis.error_reply('operation: unknown kind ' .. tostring(kind))
  end
  -- each part: its policy, its key and its numbers as sent
  local parts, at = {}, 3
  for i = 1, #keys do
    local policy = argv[at]
    local width
    if policy == 'b' then width = (kind == 'admit') and 4 or 7
    elseif policy == 't' then width = 3
    elseif policy == 'i' then width = 2
    else return redis.error_reply('operation: unknown policy ' .. tostring(policy)) end
    local values = {}
    for j = 1, width do values[j] = argv[at + j] end
    parts[i] = { policy = policy, key = keys[i], v = values }
    at = at + 1 + width
  end

  local reply = {}
  if kind == 'settle' then
    for i, p in ipairs(parts) do
      local v, left, reset = p.v, 0, 0
      local ok, failure = pcall(function()
        if p.policy == 'b' then
          local algorithm = algorithms[tonumber(v[1])]
          local units = tonumber(v[4])
          if units > 0 then
            algorithm.refund(p.key, tonumber(v[2]), tonumber(v[3]), units, tonumber(v[5]), v[6], v[7])
          end
          local _
          _, left, reset = algorithm.decide(p.key, tonumber(v[2]), tonumber(v[3]), 0, false)
        elseif p.policy == 't' then
          left, reset = executionTime.settle(p.key, tonumber(v[1]), tonumber(v[2]), tonumber(v[3]))
        else
          concurrency.release(p.key, token, 1)
          local _
          _, left, reset = concurrency.decide(p.key, tonumber(v[1]), tonumber(v[2]), 0, false)
        end
      end)
      if not ok then return redis.error_reply('operation: ' .. tostring(failure)) end
      reply[2 * i - 1], reply[2 * i] = left, reset
    end
    return reply
  end

  -- admit: every part decided before anything is written, so a refusal takes nothing
  local allowed = 1
  local states = {}
  for i, p in ipairs(parts) do
    local v = p.v
    local ok, wait, left, reset, sa, sb = pcall(function()
      if p.policy == 'b' then
        return algorithms[tonumber(v[1])].decide(p.key, tonumber(v[2]), tonumber(v[3]), tonumber(v[4]), token)
      elseif p.policy == 't' then
        return executionTime.decide(p.key, tonumber(v[1]), tonumber(v[2]), tonumber(v[3]))
      end
      return concurrency.decide(p.key, tonumber(v[1]), tonumber(v[2]), 1, token)
    end)
    if not ok then return redis.error_reply('operation: ' .. tostring(wait)) end
    if wait > 0 then allowed = 0 end
    states[i] = { wait = wait, left = left, reset = reset, sa = sa, sb = sb }
  end
  local receiptA, receiptB = nil, nil
  if allowed == 1 then
    for i, p in ipairs(parts) do
      local v, s = p.v, states[i]
      if p.policy == 'b' then
        local algorithm, units = algorithms[tonumber(v[1])], tonumber(v[4])
        s.reset = algorithm.consume(p.key, tonumber(v[2]), tonumber(v[3]), units, s.reset, s.sa, s.sb, token)
        s.left = s.left - units
        receiptA, receiptB = algorithm.receipt(p.key, s.sa, s.sb, token)
      elseif p.policy == 't' then
        s.reset = executionTime.consume(p.key, tonumber(v[1]), tonumber(v[2]), tonumber(v[3]), s.sa)
        s.left = s.left - tonumber(v[3])
      else
        s.reset = concurrency.consume(p.key, tonumber(v[1]), tonumber(v[2]), 1, s.reset, s.sa, s.sb, token)
        s.left = s.left - 1
      end
    end
  end
  reply[1] = allowed
  for i = 1, #parts do
    local s = states[i]
    reply[3 * i - 1], reply[3 * i], reply[3 * i + 1] = s.left, s.reset, s.wait
  end
  if receiptA ~= nil then
    reply[#reply + 1], reply[#reply + 2] = receiptA, receiptB
  end
  return reply
end
