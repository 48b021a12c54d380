--[[
  beginSeed: opens a new sale epoch for a product, unless its sale is live and not forced.
  The caller then seeds every segment (seedSegment) and announces the reseed.

  KEYS[1] product meta hash (fields: includes/productMeta.lua)
  ARGV[1] force: 1 = reseed even while the sale is live
  ARGV[2] total units
  ARGV[3] segments
  ARGV[4] strategy
  ARGV[5] startsAt (ms, 0 = now)
  ARGV[6] endsAt (ms, 0 = open-ended)
  ARGV[7] limit per user
  ARGV[8] payment window (seconds; 0 = every sale is final)
  ARGV[9] 1 = a purchase needs a sale token (POST /products/:id/sale-token)

  Returns
    {begun, epoch, previousSegments}   the new epoch; previousSegments = 0 for a new product
    {live, epoch}                      refused: the current sale is running
]]
local metaKey = KEYS[1]
local force, total, segments, strategy = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4]
local startsAt, endsAt, limit, payWithin, token = ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9]
--- @replies
--- @include "serverTimeMs"
--- @include "productMeta"

local current, wasStarts, wasEnds, soldOut, wasSegments, wasMaxSegments = metaForSeed(metaKey)
if current and force ~= '1' then
  local now = serverTimeMs()
  local ended = tonumber(wasEnds) > 0 and now >= tonumber(wasEnds)
  local live = soldOut ~= current and now >= tonumber(wasStarts) and not ended
  if live then return {REPLY.live, tonumber(current)} end
end
local epoch = metaBegin(metaKey, total, segments, strategy, startsAt, endsAt, limit, payWithin,
  token, math.max(segments, tonumber(wasMaxSegments or 0)))
return {REPLY.begun, epoch, tonumber(wasSegments or 0)}
