#!lua flags=allow-oom
--[[
  deductFree: the deduct of a locked segment whose lock nobody wants, without holding the lock.
  When the segment's lock is free (no holder, nobody in its line, no hand-off reservation pending)
  the lock is taken and given back inside this one atomic call: the fencing counter is bumped as
  an acquisition bumps it (so a former holder whose lease ran out is refused by the fence, as after
  any acquisition), and the deduct runs under that fence. Nothing waits on the lock, so nothing is
  woken: the release of such a hold has no one to hand off to. When the lock is not free the call
  changes nothing and answers contended: the caller takes the lock the full way (lockAcquire-4,
  its line and hand-off), so a waiter is never passed by this path.

  With the shopper's bucket asked (ARGV[12] > 0), it is taken before the lock is looked at: a
  shopper past their rate is refused here and never joins the lock's line. A contended answer then
  carries the bucket's state (the cell is taken): the caller's deduct under the lock asks no cell.

  KEYS[1..7] as lua/deduct-7.lua: segment state, buyers, claims, outbox, this order's void mark,
            spilled hash, the shopper's rate-limit bucket
  KEYS[8] the segment lock's hash (lua/lockAcquire-4.lua KEYS[1])
  KEYS[9] its fence counter (KEYS[2] there)
  KEYS[10] its line of waiters (KEYS[3] there)
  KEYS[11] its hand-off reservation (KEYS[4] there)
  ARGV[1..13] as lua/deduct-7.lua, except ARGV[3] (the fence): ignored, this call takes its own

  Returns what lua/deduct-7.lua returns, or
    {contended}          the lock is held, waited for or kept for a woken waiter: nothing was
                         changed (no cell asked)
    {contended, state}   the same, after the shopper's cell was taken (state as in deduct-7)
]]
local lockKey, fenceKey, lineKey, handoffKey = KEYS[8], KEYS[9], KEYS[10], KEYS[11]
--- @replies
--- @include "serverTimeMs"
--- @include "buyerMarker"
--- @include "spillClaim"
--- @include "segmentState"
--- @include "deductSegment"
--- @include "freeLock"

local keys, args = deductInputs()
local function takeLock()
  return freeLockFence(lockKey, fenceKey, lineKey, handoffKey, keys.void)
end

if args.rateInterval == 0 then
  -- no cell to take: a contended lock is answered before anything else is read
  local fence, voidSeen = takeLock()
  if not fence then return {REPLY.contended} end
  args.fence = fence
  return deductSegment(keys, args, {voidSeen = voidSeen})
end
args.fence = 0
return deductSegment(keys, args, {takeLock = takeLock})
