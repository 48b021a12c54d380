--[[
  fairLockAcquire: take or re-enter the lock in fair mode (Redisson RFairLock semantics): served
  first come, first served. A free lock goes only to the first live waiter in line (or to anyone
  when nobody waits); everyone else joins the line (or keeps their place) and retries before
  their place lapses.

  KEYS[1] lock hash: owner -> reentry count; PEXPIRE = lease
  KEYS[2] fence counter
  KEYS[3] waiters: zset owner -> arrival (us), oldest first
  KEYS[4] waiters' deadlines: zset owner -> ms
  ARGV[1] lease in ms
  ARGV[2] owner id
  ARGV[3] place in line, in ms (how long it is kept without another attempt)

  Returns
    {0, fence, 1}      ACQUIRED
    {1, fence, count}  REENTERED
    {2, waitMs}        BUSY: the holder's remaining lease, or, when the lock is free but another
                       waiter is first in line, the time until that waiter's place lapses
]]
--- @include "serverTimeMs"
--- @include "waitQueue"
--- @include "lockHold"

local now = serverTimeMs()
local head = liveHead(KEYS[3], KEYS[4], now)

if redis.call('EXISTS', KEYS[1]) == 0 and (head == nil or head == ARGV[2]) then
  return takeLock(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[2], ARGV[1])
end
local reentered = reenterLock(KEYS[1], KEYS[2], ARGV[2], ARGV[1])
if reentered then return reentered end

keepPlace(KEYS[3], KEYS[4], ARGV[2], now + tonumber(ARGV[3]))
local wait = redis.call('PTTL', KEYS[1])
if wait < 0 then
  wait = tonumber(redis.call('ZSCORE', KEYS[4], redis.call('ZRANGE', KEYS[3], 0, 0)[1])) - now
end
return {2, wait}
