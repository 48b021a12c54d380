#!lua flags=allow-oom
--[[
  drawWithdraw: a shopper takes their entry back, until the close (Redis's clock, or the draw
  closed by its admitter): after it, nothing is withdrawn.

  KEYS[1] the draw hash (fields: includes/drawState.lua)
  KEYS[2] the entries hash: userId -> entry record
  ARGV[1] userId
  ARGV[2] the entry window's close (ms)

  Returns {withdrawn, entry id} or {none, ''} (no entry), or {closed, ''}: nothing changed.
]]
local draw, entries, user, closeAt = KEYS[1], KEYS[2], ARGV[1], tonumber(ARGV[2])
--- @replies
--- @include "serverTimeMs"
--- @include "drawState"

if drawClosed(draw, serverTimeMs(), closeAt) then return {REPLY.closed, ''} end
local held = redis.call('HGET', entries, user)
if not held then return {REPLY.none, ''} end
redis.call('HDEL', entries, user)
redis.call('HINCRBY', draw, DRAW_COUNT, -1)
return {REPLY.withdrawn, drawEntryId(held)}
