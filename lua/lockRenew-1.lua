#!lua flags=allow-oom
--[[
  lockRenew: the watchdog's owner-checked lease renewal.

  KEYS[1] lock hash
  ARGV[1] owner id
  ARGV[2] lease in ms

  Returns 1 when renewed, 0 when the lock is gone or held by another owner (the holder lost it).
]]
local lockKey = KEYS[1]
local owner, leaseMs = ARGV[1], ARGV[2]

if redis.call('HEXISTS', lockKey, owner) == 1 then
  redis.call('PEXPIRE', lockKey, leaseMs)
  return 1
end
return 0
