#!lua flags=allow-oom
--[[
  lockLeaveLine: a waiter gives up (its wait ran out or was aborted): it leaves the line; if a
  release had just woken it (the free lock is kept for it), the lock goes to the next waiter.

  KEYS[1] lock hash
  KEYS[2] unlock channel prefix (sharded pub/sub; the waiter's process id is appended)
  KEYS[3] waiters (zset by arrival)
  KEYS[4] hand-off reservation
  ARGV[1] owner id of the waiter leaving
  ARGV[2] its process id
  ARGV[3] hand-off reservation for the next waiter, in ms

  Returns {left, woken}: left 1 when the waiter was in line, else 0; woken as lockRelease.
]]
local lockKey, channelPrefix, lineKey, handoffKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local owner, process, handoffMs = ARGV[1], ARGV[2], tonumber(ARGV[3])
--- @include "waitQueue"

local left = redis.call('ZREM', lineKey, owner) == 1
local woken = false
if redis.call('GET', handoffKey) == owner and redis.call('EXISTS', lockKey) == 0 then
  woken = wakeNext(channelPrefix, process, lineKey, handoffKey, handoffMs)
  if not woken then redis.call('DEL', handoffKey) end
end
return {left and 1 or 0, woken or ''}
