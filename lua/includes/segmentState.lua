-- A segment's state hash: the sale epoch, the stock, units sold and returned, the newest fencing
-- token a deduct accepted, and the sale window, limit and payment window copied from the product
-- (so a deduct reads one hash). Field names defined here only; TypeScript: STATE_FIELD of
-- src/inventory/records/hash-fields.ts (test/lua-records.test.ts holds them equal). The loader
-- writes each constant's literal where it is named (src/redis/scripts.ts): the helpers hold no
-- upvalue, and the deduct path allocates no table for them.
local STATE_EPOCH = 'epoch'
local STATE_STOCK = 'stock'
local STATE_SOLD = 'sold'
local STATE_RETURNED = 'returned'
local STATE_FENCE = 'fence'
local STATE_STARTS_AT = 'startsAt'
local STATE_ENDS_AT = 'endsAt'
local STATE_LIMIT_PER_USER = 'limit'
local STATE_PAY_WITHIN_SECONDS = 'payWithin'
-- 1: this epoch's spill sales are recorded in the spilled hash (lua/deduct-7.lua), so a spill
-- without its record was lost. Absent on an epoch an older version seeded (no records then): its
-- spills are trusted, as that version did
local STATE_RECORDS_SPILLS = 'recordsSpills'
-- units an operator put on sale (+) or took off it (-) in this epoch, net (lua/dropUnits-1.lua):
-- the segment's seeded share plus this is stock + sold - returned
local STATE_ADDED = 'added'
-- units an operator took off sale in this epoch, in all (never back): `added` is the net, so what
-- was put on sale is added + taken. Absent on an epoch an older version seeded
local STATE_TAKEN = 'taken'

-- a new epoch: nothing sold or returned yet, its spills recorded; the fence is left as it was
local function stateSeed(key, epoch, stock, startsAt, endsAt, limit, payWithin)
  redis.call('HSET', key, STATE_EPOCH, epoch, STATE_STOCK, stock, STATE_SOLD, 0, STATE_RETURNED, 0,
    STATE_STARTS_AT, startsAt, STATE_ENDS_AT, endsAt, STATE_LIMIT_PER_USER, limit,
    STATE_PAY_WITHIN_SECONDS, payWithin, STATE_RECORDS_SPILLS, 1, STATE_ADDED, 0, STATE_TAKEN, 0)
end

-- whether a spill sale of this epoch without its record was lost (STATE_RECORDS_SPILLS)
local function stateRecordsSpills(key)
  return redis.call('HGET', key, STATE_RECORDS_SPILLS) == '1'
end

-- what a deduct checks, as stored (false when missing):
-- epoch, stock, startsAt, endsAt, limit, fence, payWithin, sold
local function stateForDeduct(key)
  local s = redis.call('HMGET', key, STATE_EPOCH, STATE_STOCK, STATE_STARTS_AT, STATE_ENDS_AT,
    STATE_LIMIT_PER_USER, STATE_FENCE, STATE_PAY_WITHIN_SECONDS, STATE_SOLD)
  return s[1], s[2], s[3], s[4], s[5], s[6], s[7], s[8]
end

local function stateEpoch(key)
  return redis.call('HGET', key, STATE_EPOCH)
end

-- whether the segment's sale has ended at `now` (ms): it has an end (endsAt > 0) and it passed
local function stateEnded(key, now)
  local endsAt = tonumber(redis.call('HGET', key, STATE_ENDS_AT) or 0) or 0
  return endsAt > 0 and now >= endsAt
end

-- `qty` units sold from the `stock` and `sold` the deduct read (stateForDeduct), and the newest
-- fence when it moved (nil: unchanged), in one write: the script is atomic, so this is what
-- HINCRBY on each would leave, at one command where they took three
local function stateTake(key, stock, sold, qty, fence)
  local remaining = stock - qty
  if fence then
    redis.call('HSET', key, STATE_STOCK, remaining, STATE_SOLD, sold + qty, STATE_FENCE, fence)
  else
    redis.call('HSET', key, STATE_STOCK, remaining, STATE_SOLD, sold + qty)
  end
  return remaining
end

-- units back on sale: the stock now
local function stateReturn(key, qty)
  redis.call('HINCRBY', key, STATE_RETURNED, qty)
  return redis.call('HINCRBY', key, STATE_STOCK, qty)
end

-- the sale window an operator set (startsAt, endsAt: nil keeps each): pause, resume, end now
local function stateSetWindow(key, startsAt, endsAt)
  if startsAt then redis.call('HSET', key, STATE_STARTS_AT, startsAt) end
  if endsAt then redis.call('HSET', key, STATE_ENDS_AT, endsAt) end
end

-- what an operator's change of units checks: epoch, stock, fence
local function stateForUnits(key)
  local s = redis.call('HMGET', key, STATE_EPOCH, STATE_STOCK, STATE_FENCE)
  return s[1], s[2], s[3]
end

-- `units` put on sale (> 0) or taken off it (< 0), counted in STATE_ADDED (and what is taken in
-- STATE_TAKEN); the newest fence when it moved (nil: unchanged): the stock now
local function stateAdjust(key, units, fence)
  redis.call('HINCRBY', key, STATE_ADDED, units)
  if units < 0 then redis.call('HINCRBY', key, STATE_TAKEN, -units) end
  if fence then redis.call('HSET', key, STATE_FENCE, fence) end
  return redis.call('HINCRBY', key, STATE_STOCK, units)
end
