--[[
  lockForceUnlock: admin escape hatch. Deletes the lock whoever holds it and wakes the next
  waiter. The fence counter is kept, so the next holder's token is still higher than the evicted
  holder's.

  KEYS[1] lock hash
  KEYS[2] unlock channel prefix (sharded pub/sub; the waiter's process id is appended)
  KEYS[3] waiters (zset by arrival)
  KEYS[4] hand-off reservation
  ARGV[1] process id of the caller
  ARGV[2] hand-off reservation for the next waiter, in ms

  Returns {deleted, woken}: deleted 1 when a lock was deleted, else 0; woken as lockRelease.
]]
local lockKey, channelPrefix, lineKey, handoffKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local process, handoffMs = ARGV[1], tonumber(ARGV[2])
--- @include "waitQueue"

if redis.call('DEL', lockKey) == 0 then
  return {0, ''}
end
return {1, wakeNext(channelPrefix, process, lineKey, handoffKey, handoffMs) or ''}
