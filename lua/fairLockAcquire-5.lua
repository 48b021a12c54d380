#!lua flags=allow-oom
--[[
  fairLockAcquire: take or re-enter the lock in fair mode (Redisson RFairLock semantics): served
  first come, first served. A free lock goes only to the waiter a release woke (while its
  reservation lasts), else to the first waiter in line (or to anyone when nobody waits); everyone
  else joins the line. A free lock whose first waiter nobody woke (its reservation lapsed, or the
  holder's lease ran out) wakes that waiter now.

  KEYS[1] lock hash: owner -> reentry count; PEXPIRE = lease
  KEYS[2] fence counter
  KEYS[3] waiters: zset owner -> arrival (us), oldest first
  KEYS[4] hand-off reservation
  KEYS[5] unlock channel prefix (sharded pub/sub; the waiter's process id is appended)
  ARGV[1] lease in ms
  ARGV[2] owner id
  ARGV[3] join the line when busy: 0 = no, > 0 = yes
  ARGV[4] 1 when the caller joined the line before
  ARGV[5] hand-off reservation for a waiter this call wakes, in ms
  ARGV[6] 0 when owner cannot hold the lock already (a fresh acquire() handle): no re-entry check

  Returns
    {acquired, fence, 1}      ACQUIRED
    {reentered, fence, count} REENTERED
    {busy, waitMs}            the holder's remaining lease, or what is left of the reservation
                              of the waiter the lock is kept for
]]
local lockKey, fenceKey, lineKey, handoffKey, channelPrefix = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local leaseMs, owner, wait, inLine = ARGV[1], ARGV[2], ARGV[3] ~= '0', ARGV[4] == '1'
local handoffMs, mayReenter = tonumber(ARGV[5]), ARGV[6] ~= '0'
--- @replies
--- @include "lockHold"

-- PTTL rather than EXISTS: one read says whether the lock is held and, if so, the busy reply's wait
local ttl = redis.call('PTTL', lockKey)
if ttl ~= -2 then
  return reenterOrBusy(lockKey, fenceKey, lineKey, owner, leaseMs, wait, ttl, mayReenter)
end
local reserved = redis.call('GET', handoffKey)
if reserved == owner then
  return takeLock(lockKey, fenceKey, lineKey, handoffKey, owner, leaseMs, inLine, reserved)
end
if not reserved then
  local head = redis.call('ZRANGE', lineKey, 0, 0)[1]
  if head == nil or head == owner then
    return takeLock(lockKey, fenceKey, lineKey, handoffKey, owner, leaseMs, head == owner, false)
  end
  wakeNext(channelPrefix, '', lineKey, handoffKey, handoffMs)
end
return keptForAnother(lineKey, handoffKey, owner, wait)
