--[[
  lockRenew: the watchdog's owner-checked lease renewal.

  KEYS[1] lock hash
  ARGV[1] owner id
  ARGV[2] lease in ms

  Returns 1 when renewed, 0 when the lock is gone or held by another owner (the holder lost it).
]]
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
