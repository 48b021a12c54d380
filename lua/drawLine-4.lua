#!lua flags=allow-oom
--[[
  drawLine: writes the next part of a drawn draw's line into its waiting room: tickets
  ARGV[2].. in rank order (ticket r is rank r), so the room's admitter admits the winners, then
  the waitlist, strictly in rank order. The first part opens the room (served 0, nobody in a
  lobby). Fenced as the room's ticks are (the room hash's admitter fence): a holder whose lease a
  newer one took writes nothing. A part written already is not written again.

  KEYS[1] room hash (fields: includes/roomState.lua)
  KEYS[2] places hash: userId -> ticket
  KEYS[3] line hash: ticket -> userId
  KEYS[4] the draw hash (fields: includes/drawState.lua)
  ARGV[1] fencing token of the admitter's lease
  ARGV[2] the first ticket of this part (the room's last ticket + 1)
  ARGV[3] seconds the keys live
  ARGV[4..] the shoppers of tickets ARGV[2], ARGV[2] + 1, ...

  Returns {written, the room's last ticket now}, {had, the room's last ticket} when the part is
  there already or does not follow it, or {fenced, newer token}.
]]
local room, places, line, draw = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local fence, first, ttl = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
--- @replies
--- @include "serverTimeMs"
--- @include "roomState"

local seen = tonumber(redis.call('HGET', room, ROOM_ADMITTER_FENCE) or '0')
if fence < seen then return {REPLY.fenced, seen} end
redis.call('HSET', room, ROOM_ADMITTER_FENCE, fence)
local last = tonumber(redis.call('HGET', room, ROOM_NEXT) or '0')
if first ~= last + 1 then return {REPLY.had, last} end
for i = 4, #ARGV do
  local ticket = first + i - 4
  redis.call('HSET', line, ticket, ARGV[i])
  redis.call('HSET', places, ARGV[i], ticket)
end
last = first + #ARGV - 4
redis.call('HSET', room, ROOM_NEXT, last)
if redis.call('HGET', room, ROOM_OPENED) ~= '1' then
  redis.call('HSET', room, ROOM_OPENED, 1, ROOM_OPENED_AT, serverTimeMs(), ROOM_SERVED, 0,
    ROOM_LOBBY_COUNT, 0)
end
for _, key in ipairs(KEYS) do redis.call('EXPIRE', key, ttl) end
return {REPLY.written, last}
