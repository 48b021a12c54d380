#!lua flags=allow-oom
--[[
  dropUnits: an operator puts units on sale in one segment, or takes unsold ones off it, during a
  drop. Taking never goes below the stock (sold units are not in it: nothing sold is taken back);
  it takes what there is, up to what was asked. Counted in the segment's `added` field, so
  reconciliation stays exact: seeded share + added = stock + sold - returned. Under the segment's
  lock when the caller holds it (its fence is checked and kept, as a deduct's is).

  Flagged allow-oom, as the sale's scripts are: units put back on sale (or taken off) at maxmemory
  are part of running the drop. What it writes is bounded: counters and the fence of an existing
  segment state of this epoch.

  KEYS[1] segment state hash (includes/segmentState.lua)
  ARGV[1] epoch
  ARGV[2] units: > 0 put on sale; < 0 taken off, at most the stock
  ARGV[3] fencing token of the segment lock held (0: none)

  Returns {done, units changed (signed), stock now}
       or {staleEpoch, the segment's epoch (0: never seeded)}
       or {staleFence, the newer fence a deduct accepted}
]]
local stateKey = KEYS[1]
local epoch, units, fence = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
--- @replies
--- @include "segmentState"

local segEpoch, stockText, fenceText = stateForUnits(stateKey)
if segEpoch ~= epoch then return {REPLY.staleEpoch, tonumber(segEpoch or 0)} end
local lastFence = tonumber(fenceText or 0)
if fence > 0 and fence < lastFence then return {REPLY.staleFence, lastFence} end
local stock = tonumber(stockText)
if units < 0 then units = -math.min(stock, -units) end
if units == 0 then return {REPLY.done, 0, stock} end
return {REPLY.done, units, stateAdjust(stateKey, units, fence > lastFence and fence or nil)}
