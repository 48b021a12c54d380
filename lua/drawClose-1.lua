#!lua flags=allow-oom
--[[
  drawClose: the draw's admitter closes it at the end of its entry window (Redis's clock): from the
  close on, no entry is taken and none withdrawn, so the entries read after it are the list the
  freeze screens. Fenced: an admitter whose lease a newer one took is refused. Closing again
  answers the first close.

  KEYS[1] the draw hash (fields: includes/drawState.lua)
  ARGV[1] fencing token of the admitter's lease
  ARGV[2] the entry window's close (ms)

  Returns {closed, closed at (Redis ms), entries held, entries ever taken}, {early, ms to the
  close}, or {fenced, the newer token}.
]]
local draw, fence, closeAt = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2])
--- @replies
--- @include "serverTimeMs"
--- @include "drawState"

local seen = tonumber(redis.call('HGET', draw, DRAW_FENCE) or '0')
if fence < seen then return {REPLY.fenced, seen} end
local now = serverTimeMs()
local closedAt = tonumber(redis.call('HGET', draw, DRAW_CLOSED_AT) or '0')
if closedAt == 0 then
  if now < closeAt then return {REPLY.early, closeAt - now} end
  closedAt = now
  redis.call('HSET', draw, DRAW_CLOSED_AT, closedAt)
end
redis.call('HSET', draw, DRAW_FENCE, fence)
local s = redis.call('HMGET', draw, DRAW_COUNT, DRAW_SEQ)
return {REPLY.closed, closedAt, tonumber(s[1] or '0'), tonumber(s[2] or '0')}
