#!lua flags=allow-oom
--[[
  lockRelease: owner-checked unlock. Decrements the hold count; at zero deletes the lock, wakes
  the oldest waiter (one waiter, whichever process it is in) and reserves the lock for it (see
  wakeNext). Never touches a lock held by another owner.

  KEYS[1] lock hash
  KEYS[2] unlock channel prefix (sharded pub/sub; the waiter's process id is appended)
  KEYS[3] waiters (zset by arrival)
  KEYS[4] hand-off reservation
  ARGV[1] owner id
  ARGV[2] releasing process id (it wakes its own waiters without a notice)
  ARGV[3] hand-off reservation, in ms

  Returns
    {stillHeld, count}  reentrant hold: count holds remain
    {released, woken}   woken = owner id of the waiter woken, or "" when nobody waits
    {notHeld}           the lock is gone (lease expired) or held by another owner
]]
local lockKey, channelPrefix, lineKey, handoffKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local owner, releaser, handoffMs = ARGV[1], ARGV[2], tonumber(ARGV[3])
--- @replies
--- @include "waitQueue"

local count = redis.call('HGET', lockKey, owner)
if not count then
  return {REPLY.notHeld}
end
if tonumber(count) > 1 then
  return {REPLY.stillHeld, redis.call('HINCRBY', lockKey, owner, -1)}
end
redis.call('DEL', lockKey)
return {REPLY.released, wakeNext(channelPrefix, releaser, lineKey, handoffKey, handoffMs) or ''}
