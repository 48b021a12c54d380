-- A segment lock nobody wants, taken and given back inside the caller's own atomic call
-- (lua/deductFree-11.lua, lua/deductKeyedFree-14.lua): free means no holder, nobody in its line and
-- no hand-off reservation (lua/lockAcquire-4.lua's keys), one read for all three (a line with
-- nobody in it, like a lock nobody holds, is no key at all). Taking it bumps the fencing counter
-- as an acquisition does. The order's void mark is counted in the same read (the deduct asks for
-- it next; almost always none of the four exists): only when one does is it asked alone. Returns
-- the fence and the void mark's EXISTS (0 or 1), or nil when the lock is contended (nothing
-- changed).
local function freeLockFence(lockKey, fenceKey, lineKey, handoffKey, voidKey)
  local found = redis.call('EXISTS', lockKey, lineKey, handoffKey, voidKey)
  local void = 0
  if found > 0 then
    void = redis.call('EXISTS', voidKey)
    if found > void then return nil end
  end
  return redis.call('INCR', fenceKey), void
end
