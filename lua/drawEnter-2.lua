#!lua flags=allow-oom
--[[
  drawEnter: a shopper enters a product's draw, once. A second entry answers the first (its id),
  also after the close; a new one is taken only inside the entry window, by Redis's clock, while
  the draw is not closed and holds fewer than ARGV[7] entries.

  KEYS[1] the draw hash (fields: includes/drawState.lua)
  KEYS[2] the entries hash: userId -> entry record (includes/drawState.lua)
  ARGV[1] userId
  ARGV[2] the entry id to give a new entry
  ARGV[3] the client's address block ('' when unknown)
  ARGV[4] the entry window's opening (ms)
  ARGV[5] the entry window's close (ms)
  ARGV[6] seconds the draw's keys live
  ARGV[7] most entries the draw holds

  Returns {entered, entry id, entries now} for a new entry, {held, entry id, entries now} for the
  shopper's entry already; {early, ms to the opening}, {closed, 0} or {full, entries now}: nothing
  written.
]]
local draw, entries = KEYS[1], KEYS[2]
local user, entryId, block = ARGV[1], ARGV[2], ARGV[3]
local openAt, closeAt, ttl, cap = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]),
  tonumber(ARGV[7])
--- @replies
--- @include "serverTimeMs"
--- @include "drawState"

local held = redis.call('HGET', entries, user)
if held then
  return {REPLY.held, drawEntryId(held), tonumber(redis.call('HGET', draw, DRAW_COUNT) or '0')}
end
local now = serverTimeMs()
if now < openAt then return {REPLY.early, openAt - now} end
if drawClosed(draw, now, closeAt) then return {REPLY.closed, 0} end
local count = tonumber(redis.call('HGET', draw, DRAW_COUNT) or '0')
if count >= cap then return {REPLY.full, count} end
local seq = redis.call('HINCRBY', draw, DRAW_SEQ, 1)
redis.call('HSET', entries, user, drawEntryRecord(entryId, block, seq))
count = redis.call('HINCRBY', draw, DRAW_COUNT, 1)
redis.call('EXPIRE', draw, ttl)
redis.call('EXPIRE', entries, ttl)
return {REPLY.entered, entryId, count}
