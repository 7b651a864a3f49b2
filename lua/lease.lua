--[[ lease: renew the slots one call holds on its CONCURRENCY limits. Run as a script where
  Redis has no functions; lua/library.lua is the same call as a function. (A release is a call
  of lua/hit.lua, the `release` kind, so that the releases of one turn share a call as hits do.)
  KEYS[i]        the CONCURRENCY counter of the call's limit i, all of one hash tag (one slot)
  ARGV[1]        the call's kind: 'renew' (the only one)
  ARGV[2]        the lease token
  ARGV[2i+1]     leaseMs of KEYS[i]
  ARGV[2i+2]     the slots KEYS[i] took
  The TypeScript side of this format is src/stores/redis/leases.ts, with the same names.
  Returns  per key: the slots renewed (a renewal never brings back a slot whose lease expired,
           was released or was reset: another call may hold it now).
  Time comes from the server's clock (TIME, read once). ]]

--- @include "lib/algorithms"
--- @include "lib/batch"

return leaseCall(KEYS, ARGV)
