#!lua flags=allow-oom
--[[
  deductKeyedFree: lua/deductKeyed-10.lua on a locked segment whose lock nobody wants, the lock
  taken and given back inside the call as lua/deductFree-11.lua does. The key's record is read
  first: a found record is answered whoever holds the lock. When the lock is not
  free the call writes no record and answers contended: the caller claims the key the usual way
  and takes the lock the full way, so a waiter is never passed. With the shopper's cell asked
  (ARGV[12] > 0) it is taken before the lock is looked at, as in lua/deductFree-11.lua: a
  contended answer then carries the bucket's state (the cell is taken: the caller asks none again).

  KEYS[1..7] as lua/deduct-7.lua: segment state, buyers, claims, outbox, this order's void mark,
            spilled hash, the shopper's rate-limit bucket
  KEYS[8..11] the segment lock's hash, fence counter, line, hand-off (lua/deductFree-11.lua)
  KEYS[12] the key's record (src/inventory/idempotency/idempotency-store.ts)
  KEYS[13] the shopper's index of records (lua/idempotencyClaim-3.lua KEYS[2])
  KEYS[14] the shopper's index of final refusals (KEYS[3] there; in KEYS for the slot, untouched)
  ARGV[1..18] as lua/deductKeyed-10.lua, except ARGV[3] (the fence): ignored, this call takes its
             own

  Returns what lua/deductKeyed-10.lua returns, or
    {contended}          the lock is held, waited for or kept for a woken waiter: nothing was
                         changed (no cell asked)
    {contended, state}   the same, after the shopper's cell was taken (state as in deduct-7)
]]
local lockKey, fenceKey, lineKey, handoffKey = KEYS[8], KEYS[9], KEYS[10], KEYS[11]
local recordKey, allKey = KEYS[12], KEYS[13]
local done, running, ttl, cap, member = ARGV[14], ARGV[15], tonumber(ARGV[16]), tonumber(ARGV[17]),
  ARGV[18]
--- @replies
--- @include "serverTimeMs"
--- @include "buyerMarker"
--- @include "spillClaim"
--- @include "segmentState"
--- @include "deductSegment"
--- @include "keyedRecord"
--- @include "freeLock"

local keys, args = deductInputs()
local function takeLock()
  return freeLockFence(lockKey, fenceKey, lineKey, handoffKey, keys.void)
end

local function beforeSpill()
  return keyedCapReached(allKey, cap)
end

local stop, rateRead = keyedRecordCheck(recordKey, args.rateInterval > 0 and keys.rate)
if stop then return stop end
local r
if args.rateInterval == 0 then
  -- no cell to take: a contended lock is answered before anything else is read
  local fence, voidSeen = takeLock()
  if not fence then return {REPLY.contended} end
  args.fence = fence
  r = deductSegment(keys, args, {voidSeen = voidSeen, beforeSpill = beforeSpill})
else
  args.fence = 0
  r = deductSegment(keys, args,
    {takeLock = takeLock, rateRead = rateRead, beforeSpill = beforeSpill})
end
return keyedRecordAfter(r, recordKey, allKey, member, done, running, ttl)
