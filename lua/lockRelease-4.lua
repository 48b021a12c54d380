--[[
  lockRelease: owner-checked unlock. Decrements the hold count; at zero deletes the lock and wakes
  the oldest live waiter (one waiter, whichever process it is in). Never touches a lock held by
  another owner.

  KEYS[1] lock hash
  KEYS[2] unlock channel prefix (sharded pub/sub; the waiter's process id is appended)
  KEYS[3] waiters (zset by arrival)
  KEYS[4] waiters' deadlines (zset)
  ARGV[1] owner id
  ARGV[2] releasing process id (it wakes its own waiters without a notice)

  Returns
    {0, count}   STILL_HELD: reentrant hold, count holds remain
    {1, woken}   RELEASED; woken = owner id of the waiter woken, or "" when nobody waits
    {2}          NOT_HELD: the lock is gone (lease expired) or held by another owner
]]
--- @include "serverTimeMs"
--- @include "waitQueue"

if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
  return {2}
end
local count = redis.call('HINCRBY', KEYS[1], ARGV[1], -1)
if count > 0 then
  return {0, count}
end
redis.call('DEL', KEYS[1])
return {1, wakeNext(KEYS[2], ARGV[2], KEYS[3], KEYS[4], serverTimeMs()) or ''}
