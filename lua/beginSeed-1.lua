--[[
  beginSeed: opens a new sale epoch for a product, unless its sale is live and not forced.
  The caller then seeds every segment (seedSegment) and announces the reseed.

  KEYS[1] product meta hash (fields: src/inventory/records/product-meta.ts)
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

local m = redis.call('HMGET', metaKey, 'epoch', 'startsAt', 'endsAt', 'soldOut', 'segments', 'maxSegments')
if m[1] and force ~= '1' then
  local now = serverTimeMs()
  local ended = tonumber(m[3]) > 0 and now >= tonumber(m[3])
  local live = m[4] ~= m[1] and now >= tonumber(m[2]) and not ended
  if live then return {REPLY.live, tonumber(m[1])} end
end
local epoch = redis.call('HINCRBY', metaKey, 'epoch', 1)
redis.call('HSET', metaKey, 'total', total, 'segments', segments, 'strategy', strategy,
  'startsAt', startsAt, 'endsAt', endsAt, 'limit', limit, 'soldOut', 0, 'payWithin', payWithin,
  'token', token,
  'maxSegments', math.max(segments, tonumber(m[6] or 0)))
return {REPLY.begun, epoch, tonumber(m[5] or 0)}
