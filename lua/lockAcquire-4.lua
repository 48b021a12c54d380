#!lua flags=allow-oom
--[[
  lockAcquire: take or re-enter a Redisson-style reentrant lock, default mode. A free lock goes to
  whoever asks first, except while it is reserved for the waiter a release just woke (see
  wakeNext): no barging past a woken waiter, so no contender starves. A caller that will wait
  joins the lock's line, so a release wakes exactly one waiter.

  KEYS[1] lock hash: owner -> reentry count; its PEXPIRE is the lease
  KEYS[2] fence counter (never expires): INCR'd on every first acquisition
  KEYS[3] waiters: zset owner -> arrival (us), oldest first
  KEYS[4] hand-off reservation: the owner a release woke, PX = how long it is kept for it
  ARGV[1] lease in ms
  ARGV[2] owner id ("<process id>:<context id>")
  ARGV[3] join the line when busy: 0 = no (a single attempt), > 0 = yes (the caller will wait)
  ARGV[4] 1 when the caller joined the line before (it leaves it when it takes the lock)
  ARGV[5] 0 when owner cannot hold the lock already (a fresh acquire() handle): no re-entry check

  Returns
    {acquired, fence, 1}      the lock was free; fence is the new fencing token
    {reentered, fence, count} already held by this owner; count is the new hold count
    {busy, waitMs}            held by another owner (waitMs: its remaining lease, -1: none), or
                              reserved for another waiter (waitMs: what is left of the reservation)
]]
local lockKey, fenceKey, lineKey, handoffKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local leaseMs, owner, wait, inLine = ARGV[1], ARGV[2], ARGV[3] ~= '0', ARGV[4] == '1'
local mayReenter = ARGV[5] ~= '0'
--- @replies
--- @include "lockHold"

-- PTTL rather than EXISTS: one read says whether the lock is held and, if so, the busy reply's wait
local ttl = redis.call('PTTL', lockKey)
if ttl ~= -2 then
  return reenterOrBusy(lockKey, fenceKey, lineKey, owner, leaseMs, wait, ttl, mayReenter)
end
local reserved = redis.call('GET', handoffKey)
if not reserved or reserved == owner then
  return takeLock(lockKey, fenceKey, lineKey, handoffKey, owner, leaseMs, inLine, reserved)
end
return keptForAnother(lineKey, handoffKey, owner, wait)
