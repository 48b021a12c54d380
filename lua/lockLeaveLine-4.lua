--[[
  lockLeaveLine: a waiter gives up (its wait ran out or was aborted): it leaves the line, and if
  the lock is free, the next waiter is woken (it may have been waiting behind us in fair mode).

  KEYS[1] lock hash
  KEYS[2] unlock channel prefix (sharded pub/sub; the waiter's process id is appended)
  KEYS[3] waiters (zset by arrival)
  KEYS[4] waiters' deadlines (zset)
  ARGV[1] owner id of the waiter leaving
  ARGV[2] its process id

  Returns {left, woken}: left 1 when the waiter was in line, else 0; woken as lockRelease.
]]
--- @include "serverTimeMs"
--- @include "waitQueue"

local left = leaveLine(KEYS[3], KEYS[4], ARGV[1])
local woken = false
if left and redis.call('EXISTS', KEYS[1]) == 0 then
  woken = wakeNext(KEYS[2], ARGV[2], KEYS[3], KEYS[4], serverTimeMs())
end
return {left and 1 or 0, woken or ''}
