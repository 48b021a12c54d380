-- Taking and re-entering a reentrant lock: the steps both acquire modes share, so a fair and a
-- default lock hold, lease and fence alike. The including script defines REPLY (acquired,
-- reentered, busy).
--- @include "waitQueue"

-- Takes the (free) lock for owner: out of the line (when it was in it), its reservation spent
-- (when it had one), one hold, the lease, the next fencing token. A reserved owner is out of the
-- line already (wakeNext popped it, and it cannot rejoin while the lock is kept for it), so only
-- an unreserved one that joined before pays the ZREM.
-- Returns the ACQUIRED reply {acquired, fence, 1}.
local function takeLock(lockKey, fenceKey, lineKey, handoffKey, owner, leaseMs, inLine, reserved)
  if reserved then
    redis.call('DEL', handoffKey)
  elseif inLine then
    redis.call('ZREM', lineKey, owner)
  end
  redis.call('HSET', lockKey, owner, 1)
  redis.call('PEXPIRE', lockKey, leaseMs)
  return {REPLY.acquired, redis.call('INCR', fenceKey), 1}
end

-- Re-enters when owner holds the lock: one more hold, the lease renewed, the fence unchanged.
-- Returns the REENTERED reply {reentered, fence, count}, or nil when owner does not hold it.
local function reenterLock(lockKey, fenceKey, owner, leaseMs)
  if redis.call('HEXISTS', lockKey, owner) == 0 then return nil end
  local count = redis.call('HINCRBY', lockKey, owner, 1)
  redis.call('PEXPIRE', lockKey, leaseMs)
  return {REPLY.reentered, tonumber(redis.call('GET', fenceKey) or 0), count}
end

-- The lock is held (ttl: its PTTL, which told the caller so): re-enters it when owner is the
-- holder (an owner that cannot be, mayReenter false, skips the check); else the caller joins the
-- line (when it will wait) and learns the holder's remaining lease. Returns the reply.
local function reenterOrBusy(lockKey, fenceKey, lineKey, owner, leaseMs, wait, ttl, mayReenter)
  if mayReenter then
    local reentered = reenterLock(lockKey, fenceKey, owner, leaseMs)
    if reentered then return reentered end
  end
  if wait then joinLine(lineKey, owner) end
  return {REPLY.busy, ttl}
end

-- The lock is free but kept for another waiter: the caller joins the line (when it will wait) and
-- learns what is left of the reservation. Returns the BUSY reply.
local function keptForAnother(lineKey, handoffKey, owner, wait)
  if wait then joinLine(lineKey, owner) end
  return {REPLY.busy, math.max(0, redis.call('PTTL', handoffKey))}
end
