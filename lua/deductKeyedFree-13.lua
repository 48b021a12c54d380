--[[
  deductKeyedFree: lua/deductKeyed-9.lua on a locked segment whose lock nobody wants, the lock
  taken and given back inside the call as lua/deductFree-10.lua does. The key's record and the
  cap are read first: a found record is answered whoever holds the lock. When the lock is not
  free the call changes nothing and answers contended: the caller claims the key the usual way
  and takes the lock the full way, so a waiter is never passed.

  KEYS[1..6] as lua/deduct-6.lua: segment state, buyers, claims, outbox, this order's void mark,
            spilled hash
  KEYS[7..10] the segment lock's hash, fence counter, line, hand-off (lua/deductFree-10.lua)
  KEYS[11] the key's record (src/inventory/idempotency-store.ts)
  KEYS[12] the shopper's index of records (lua/idempotencyClaim-3.lua KEYS[2])
  KEYS[13] the shopper's index of final refusals (KEYS[3] there; in KEYS for the slot, untouched)
  ARGV[1..16] as lua/deductKeyed-9.lua, except ARGV[3] (the fence): ignored, this call takes its
             own

  Returns what lua/deductKeyed-9.lua returns, or
    {contended}   the lock is held, waited for or kept for a woken waiter: nothing was changed
]]
local stateKey, buyersKey, claimsKey, outboxKey, voidKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local spilledKey = KEYS[6]
local lockKey, fenceKey, lineKey, handoffKey = KEYS[7], KEYS[8], KEYS[9], KEYS[10]
local recordKey, allKey = KEYS[11], KEYS[12]
local mode, epoch, user = ARGV[1], ARGV[2], ARGV[4]
local qty, orderId, productId, segment, home = tonumber(ARGV[5]), ARGV[6], ARGV[7], ARGV[8], ARGV[9]
local touchedAt, touchLease = tonumber(ARGV[10]), tonumber(ARGV[11])
local done, running, ttl, cap, member = ARGV[12], ARGV[13], tonumber(ARGV[14]), tonumber(ARGV[15]),
  ARGV[16]
--- @replies
--- @include "serverTimeMs"
--- @include "buyerMarker"
--- @include "spillClaim"
--- @include "segmentState"
--- @include "deductSegment"
--- @include "keyedRecord"

local stop = keyedRecordCheck(recordKey, allKey, cap)
if stop then return stop end
-- one read for all three: a line with nobody in it, like a lock nobody holds, is no key at all
if redis.call('EXISTS', lockKey, lineKey, handoffKey) > 0 then return {REPLY.contended} end
local fence = redis.call('INCR', fenceKey)
local r = deductSegment(stateKey, buyersKey, claimsKey, outboxKey, voidKey, spilledKey, mode, epoch,
  fence, user, qty, orderId, productId, segment, home, touchedAt, touchLease)
return keyedRecordAfter(r, recordKey, allKey, member, done, running, ttl)
