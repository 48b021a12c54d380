-- A product's draw in one sale epoch: its entries' counters, its close and the admitter's fence.
-- Field names defined here only; TypeScript: DRAW_FIELD of src/inventory/records/hash-fields.ts
-- (test/lua-records.test.ts holds them equal). The loader folds the constants (src/redis/scripts.ts).
-- entries ever taken (HINCRBY): an entry's number in the order they came
local DRAW_SEQ = 'seq'
-- entries held now (a withdrawal takes one back)
local DRAW_COUNT = 'count'
-- Redis ms the draw was closed by its admitter (lua/drawClose-1.lua): nothing enters, nothing is
-- withdrawn from then on, whatever the clock says
local DRAW_CLOSED_AT = 'closedAt'
-- the newest admitter fencing token that closed it
local DRAW_FENCE = 'closerFence'

-- A shopper's entry (the entries hash: userId -> record): '<entryId> <address block> <seq>'; the
-- block is '-' when unknown. TypeScript: src/inventory/records/draw-entry.ts.
local function drawEntryRecord(entryId, block, seq)
  if block == '' then block = '-' end
  return entryId .. ' ' .. block .. ' ' .. seq
end

local function drawEntryId(record)
  return string.match(record, '^(%S+)')
end

-- the draw is closed: by its admitter, or by the clock
local function drawClosed(draw, now, closeAt)
  return now >= closeAt or redis.call('HEXISTS', draw, DRAW_CLOSED_AT) == 1
end
