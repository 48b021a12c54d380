--[[
  deductFree: the deduct of a locked segment whose lock nobody wants, without holding the lock.
  When the segment's lock is free (no holder, nobody in its line, no hand-off reservation pending)
  the lock is taken and given back inside this one atomic call: the fencing counter is bumped as
  an acquisition bumps it (so a former holder whose lease ran out is refused by the fence, as after
  any acquisition), and the deduct runs under that fence. Nothing waits on the lock, so nothing is
  woken: the release of such a hold has no one to hand off to. When the lock is not free the call
  changes nothing and answers contended: the caller takes the lock the full way (lockAcquire-4,
  its line and hand-off), so a waiter is never passed by this path.

  KEYS[1..6] as lua/deduct-6.lua: segment state, buyers, claims, outbox, this order's void mark,
            spilled hash
  KEYS[7] the segment lock's hash (lua/lockAcquire-4.lua KEYS[1])
  KEYS[8] its fence counter (KEYS[2] there)
  KEYS[9] its line of waiters (KEYS[3] there)
  KEYS[10] its hand-off reservation (KEYS[4] there)
  ARGV[1..11] as lua/deduct-6.lua, except ARGV[3] (the fence): ignored, this call takes its own

  Returns what lua/deduct-6.lua returns, or
    {contended}   the lock is held, waited for or kept for a woken waiter: nothing was changed
]]
local stateKey, buyersKey, claimsKey, outboxKey, voidKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local spilledKey = KEYS[6]
local lockKey, fenceKey, lineKey, handoffKey = KEYS[7], KEYS[8], KEYS[9], KEYS[10]
local mode, epoch, user = ARGV[1], ARGV[2], ARGV[4]
local qty, orderId, productId, segment, home = tonumber(ARGV[5]), ARGV[6], ARGV[7], ARGV[8], ARGV[9]
local touchedAt, touchLease = tonumber(ARGV[10]), tonumber(ARGV[11])
--- @replies
--- @include "serverTimeMs"
--- @include "buyerMarker"
--- @include "spillClaim"
--- @include "segmentState"
--- @include "deductSegment"

-- one read for all three: a line with nobody in it, like a lock nobody holds, is no key at all
if redis.call('EXISTS', lockKey, lineKey, handoffKey) > 0 then return {REPLY.contended} end
local fence = redis.call('INCR', fenceKey)
return deductSegment(stateKey, buyersKey, claimsKey, outboxKey, voidKey, spilledKey, mode, epoch,
  fence, user, qty, orderId, productId, segment, home, touchedAt, touchLease)
