--[[ library: the calls of lua/hit.lua, lua/refund.lua and lua/lease.lua as one Redis Functions
  library (Redis 7.0+), with the same contracts (their headers: KEYS and ARGV by position,
  and the reply codes). A script runs its whole body on every call:
  the definitions of every algorithm's functions before its first hit, which cost a decision
  more than its commands did (BENCHMARKS.md). A library's body runs once, when FUNCTION LOAD
  loads it; FCALL then runs only the call.
  src/stores/redis/lua-loader.ts writes the first two lines: `#!lua name=<NAME>` and `local NAME = '<NAME>'`, NAME
  naming this text's version (its SHA-1), so that processes of two versions of the package each
  call their own library on one server, and FUNCTION LOAD REPLACE never swaps one for another.
  <NAME>_hit     lua/hit.lua's call: FCALL <NAME>_hit numkeys KEYS ARGV
  <NAME>_refund  lua/refund.lua's call
  <NAME>_lease   lua/lease.lua's call (the renewal of a CONCURRENCY lease)
  <NAME>_operation  lua/operation.lua's call (an operation's secondary limits: admit, settle)
  <NAME>_ready   FCALL <NAME>_ready 0: returns 1 and touches nothing. The set-up calls it once
                 after loading, to learn whether this user may FCALL (an ACL may allow FUNCTION
                 LOAD but not FCALL); where it may not, the store runs the scripts instead.
  Each call but _ready may reach keys of several slots of the node (allow-cross-slot-keys): a
  cluster batch holds the hits of one master, routed by its first key, as lua/hit.lua describes.
  None of those calls is read-only: a peek may repair a TTL (see lib/batch). ]]

--- @include "lib/algorithms"
--- @include "lib/batch"
--- @include "lib/execution-time"
--- @include "lib/operation"

redis.register_function({
  function_name = NAME .. '_hit',
  callback = decideBatch,
  flags = { 'allow-cross-slot-keys' },
})
redis.register_function({
  function_name = NAME .. '_refund',
  callback = refundParts,
  flags = { 'allow-cross-slot-keys' },
})
redis.register_function({
  function_name = NAME .. '_lease',
  callback = leaseCall,
  flags = { 'allow-cross-slot-keys' },
})
redis.register_function({
  function_name = NAME .. '_operation',
  callback = operationCall,
  flags = { 'allow-cross-slot-keys' },
})
redis.register_function({
  function_name = NAME .. '_ready',
  callback = function()
    return 1
  end,
  flags = { 'no-writes' },
})
