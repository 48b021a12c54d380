#!lua flags=allow-oom
--[[
  deductKeyed: a purchase under an Idempotency-Key, deducted from the shopper's home segment
  (lock-free) with its record read and written in the same atomic call, where lua/idempotencyClaim-3.lua,
  lua/deduct-7.lua and lua/idempotencySettle-3.lua would take three. The record, the shopper's
  index of records and the shopper's rate-limit bucket share the home segment's slot (a key is
  scoped to shopper and product).
  The key's record found: nothing changes (no cell is taken either), it is returned. Else the
  deduct (mode home, or claim when home is known empty; the shopper's cell taken first when asked,
  as lua/deduct-7.lua takes it, its bucket read with the record in one MGET) and, by its reply
  (lua/includes/keyedRecord.lua): sold, the finished record (not indexed: sales are bounded by
  the per-user limit); a spill claim, the running record, indexed, unless the index is at its cap:
  then full, nothing written (the caller claims the usual way); anything else (rateLimited too),
  nothing written.

  KEYS[1..7] as lua/deduct-7.lua: segment state, buyers, claims, outbox, this order's void mark,
            spilled hash, the shopper's rate-limit bucket
  KEYS[8] the key's record (src/inventory/idempotency/idempotency-store.ts)
  KEYS[9] the shopper's index of records (lua/idempotencyClaim-3.lua KEYS[2])
  KEYS[10] the shopper's index of final refusals (KEYS[3] there; in KEYS for the slot, untouched)
  ARGV[1..13] as lua/deduct-7.lua (mode home or claim; ARGV[12] 0: take no cell)
  ARGV[14] the finished record's value (the sale's answer), written on a sale
  ARGV[15] the running record's value (with its lease), written on a spill claim
  ARGV[16] the records' time to live, in seconds
  ARGV[17] the cap: records the shopper may hold
  ARGV[18] the record's member name in the index

  Returns what lua/deduct-7.lua returns (the bucket's state last, when a cell was asked), or
    {record, value}   the key holds a record: nothing was changed
    {full}            a spill claim met the shopper's index at its cap: nothing was changed (the
                      bucket's state last, when a cell was taken)
]]
local recordKey, allKey = KEYS[8], KEYS[9]
local done, running, ttl, cap, member = ARGV[14], ARGV[15], tonumber(ARGV[16]), tonumber(ARGV[17]),
  ARGV[18]
--- @replies
--- @include "serverTimeMs"
--- @include "buyerMarker"
--- @include "spillClaim"
--- @include "segmentState"
--- @include "deductSegment"
--- @include "keyedRecord"

local keys, args = deductInputs()
local function beforeSpill()
  return keyedCapReached(allKey, cap)
end

local stop, rateRead = keyedRecordCheck(recordKey, args.rateInterval > 0 and keys.rate)
if stop then return stop end
local r = deductSegment(keys, args, {rateRead = rateRead, beforeSpill = beforeSpill})
return keyedRecordAfter(r, recordKey, allKey, member, done, running, ttl)
