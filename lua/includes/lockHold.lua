-- Taking and re-entering a reentrant lock: the steps both acquire modes share, so a fair and a
-- default lock hold, lease and fence alike. Needs waitQueue (include it first).

-- Takes the (free) lock for owner: out of the line, one hold, the lease, the next fencing token.
-- Returns the ACQUIRED reply {0, fence, 1}.
local function takeLock(lockKey, fenceKey, queueKey, deadlinesKey, owner, leaseMs)
  leaveLine(queueKey, deadlinesKey, owner)
  redis.call('HSET', lockKey, owner, 1)
  redis.call('PEXPIRE', lockKey, leaseMs)
  return {0, redis.call('INCR', fenceKey), 1}
end

-- Re-enters when owner holds the lock: one more hold, the lease renewed, the fence unchanged.
-- Returns the REENTERED reply {1, fence, count}, or nil when owner does not hold it.
local function reenterLock(lockKey, fenceKey, owner, leaseMs)
  if redis.call('HEXISTS', lockKey, owner) == 0 then return nil end
  local count = redis.call('HINCRBY', lockKey, owner, 1)
  redis.call('PEXPIRE', lockKey, leaseMs)
  return {1, tonumber(redis.call('GET', fenceKey) or 0), count}
end
