--[[
  lockAcquire: take or re-enter a Redisson-style reentrant lock, default (non-fair) mode: a free
  lock goes to whoever asks first, even when others wait (barging: the cheapest hand-off). A
  caller that will wait joins the lock's line, so a release wakes exactly one waiter.

  KEYS[1] lock hash: owner -> reentry count; its PEXPIRE is the lease
  KEYS[2] fence counter (never expires): INCR'd on every first acquisition
  KEYS[3] waiters: zset owner -> arrival (us), oldest first
  KEYS[4] waiters' deadlines: zset owner -> ms
  ARGV[1] lease in ms
  ARGV[2] owner id ("<process uuid>:<context id>")
  ARGV[3] place in line, in ms: 0 = do not wait (no place taken); else how long the place is
          kept without another attempt

  Returns
    {0, fence, 1}      ACQUIRED: the lock was free; fence is the new fencing token
    {1, fence, count}  REENTERED: already held by this owner; count is the new hold count
    {2, pttl}          BUSY: held by another owner; pttl = its remaining lease in ms (-1: none)
]]
--- @include "serverTimeMs"
--- @include "waitQueue"
--- @include "lockHold"

if redis.call('EXISTS', KEYS[1]) == 0 then
  return takeLock(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[2], ARGV[1])
end
local reentered = reenterLock(KEYS[1], KEYS[2], ARGV[2], ARGV[1])
if reentered then return reentered end
local place = tonumber(ARGV[3])
if place > 0 then
  keepPlace(KEYS[3], KEYS[4], ARGV[2], serverTimeMs() + place)
end
return {2, redis.call('PTTL', KEYS[1])}
