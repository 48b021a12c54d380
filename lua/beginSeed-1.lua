--[[
  beginSeed: opens a new sale epoch for a product, unless its sale is live and not forced.
  The caller then seeds every segment (seedSegment) and announces the reseed.

  KEYS[1] product meta hash
  ARGV[1] force: 1 = reseed even while the sale is live
  ARGV[2] total units
  ARGV[3] segments
  ARGV[4] strategy
  ARGV[5] startsAt (ms, 0 = now)
  ARGV[6] endsAt (ms, 0 = open-ended)
  ARGV[7] limit per user

  Returns
    {0, epoch, previousSegments}   the new epoch; previousSegments = 0 for a new product
    {1, epoch}                     LIVE: refused, the current sale is running
]]
--- @include "serverTimeMs"

local m = redis.call('HMGET', KEYS[1], 'epoch', 'startsAt', 'endsAt', 'soldOut', 'segments', 'maxSegments')
if m[1] and ARGV[1] ~= '1' then
  local now = serverTimeMs()
  local ended = tonumber(m[3]) > 0 and now >= tonumber(m[3])
  local live = m[4] ~= m[1] and now >= tonumber(m[2]) and not ended
  if live then return {1, tonumber(m[1])} end
end
local epoch = redis.call('HINCRBY', KEYS[1], 'epoch', 1)
local segments = tonumber(ARGV[3])
redis.call('HSET', KEYS[1], 'total', ARGV[2], 'segments', segments, 'strategy', ARGV[4],
  'startsAt', ARGV[5], 'endsAt', ARGV[6], 'limit', ARGV[7], 'soldOut', 0,
  'maxSegments', math.max(segments, tonumber(m[6] or 0)))
return {0, epoch, tonumber(m[5] or 0)}
