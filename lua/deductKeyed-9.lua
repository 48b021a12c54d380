--[[
  deductKeyed: a purchase under an Idempotency-Key, deducted from the shopper's home segment
  (lock-free) with its record read and written in the same atomic call, where lua/idempotencyClaim-3.lua,
  lua/deduct-6.lua and lua/idempotencySettle-3.lua would take three. The record and the shopper's
  index of records share the home segment's slot (a key is scoped to shopper and product).
  The key's record found: nothing changes, it is returned. The index at its cap: nothing changes,
  full (the caller claims the usual way). Else the deduct (mode home, or claim when home is known
  empty) and, by its reply (lua/includes/keyedRecord.lua): sold, the finished record; a spill claim,
  the running record; anything else, nothing written.

  KEYS[1..6] as lua/deduct-6.lua: segment state, buyers, claims, outbox, this order's void mark,
            spilled hash
  KEYS[7] the key's record (src/inventory/idempotency-store.ts)
  KEYS[8] the shopper's index of records (lua/idempotencyClaim-3.lua KEYS[2])
  KEYS[9] the shopper's index of final refusals (KEYS[3] there; in KEYS for the slot, untouched)
  ARGV[1..11] as lua/deduct-6.lua (mode home or claim)
  ARGV[12] the finished record's value (the sale's answer), written on a sale
  ARGV[13] the running record's value (with its lease), written on a spill claim
  ARGV[14] the records' time to live, in seconds
  ARGV[15] the cap: records the shopper may hold
  ARGV[16] the record's member name in the index

  Returns what lua/deduct-6.lua returns, or
    {record, value}   the key holds a record: nothing was changed
    {full}            the shopper's index is at its cap: nothing was changed
]]
local stateKey, buyersKey, claimsKey, outboxKey, voidKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local spilledKey, recordKey, allKey = KEYS[6], KEYS[7], KEYS[8]
local mode, epoch, fence, user = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4]
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
local r = deductSegment(stateKey, buyersKey, claimsKey, outboxKey, voidKey, spilledKey, mode, epoch,
  fence, user, qty, orderId, productId, segment, home, touchedAt, touchLease)
return keyedRecordAfter(r, recordKey, allKey, member, done, running, ttl)
