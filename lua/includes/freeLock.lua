-- A segment lock nobody wants, taken and given back inside the caller's own atomic call
-- (lua/deductFree-11.lua, lua/deductKeyedFree-14.lua): free means no holder, nobody in its line and
-- no hand-off reservation (lua/lockAcquire-4.lua's keys), one read for all three (a line with
-- nobody in it, like a lock nobody holds, is no key at all). Taking it bumps the fencing counter
-- as an acquisition does. Returns the fence, or nil when the lock is contended (nothing changed).
local function freeLockFence(lockKey, fenceKey, lineKey, handoffKey)
  if redis.call('EXISTS', lockKey, lineKey, handoffKey) > 0 then return nil end
  return redis.call('INCR', fenceKey)
end
