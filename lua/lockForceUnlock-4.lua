--[[
  lockForceUnlock: admin escape hatch. Deletes the lock whoever holds it and wakes the next
  waiter. The fence counter is kept, so the next holder's token is still higher than the evicted
  holder's.

  KEYS[1] lock hash
  KEYS[2] unlock channel prefix (sharded pub/sub; the waiter's process id is appended)
  KEYS[3] waiters (zset by arrival)
  KEYS[4] waiters' deadlines (zset)
  ARGV[1] process id of the caller

  Returns {deleted, woken}: deleted 1 when a lock was deleted, else 0; woken as lockRelease.
]]
--- @include "serverTimeMs"
--- @include "waitQueue"

if redis.call('DEL', KEYS[1]) == 0 then
  return {0, ''}
end
return {1, wakeNext(KEYS[2], ARGV[1], KEYS[3], KEYS[4], serverTimeMs()) or ''}
