--[[
  roomSoldOut: one batch of the shoppers still waiting in a room whose product sold out for good,
  for their "sold out while you waited" events. The room hash keeps how far the walk got
  (ROOM_SOLD_OUT_TO, a ticket): the caller names the batch it has written (ARGV[2]) at its next
  call, so a holder that dies between writing a batch and naming it leaves that batch to be
  written again by the next holder (the events' ids make the second write a no-op), and none is
  skipped. The walk starts at the served counter (those before it were admitted) once the
  lobby's shuffle is done (every waiting shopper then holds a ticket), and goes to the last
  ticket given, read at each call: a join meanwhile is told too.

  KEYS[1] room hash (fields: includes/roomState.lua)
  KEYS[2] line hash: ticket -> userId
  ARGV[1] fencing token of the admitter's lease: a holder superseded is refused
  ARGV[2] the walk's tickets up to this one are written (0: none named)
  ARGV[3] most shoppers in the batch

  Returns {batch, from, served, the shoppers of tickets from + 1, from + 2, ...} (none: the walk is
  done, as far as the line goes), {unready} before the opening or while the shuffle goes on, or
  {fenced, newer fence}.
]]
--- @replies
--- @include "roomState"

local room, line = KEYS[1], KEYS[2]
local fence, writtenTo, size = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])

local seen = tonumber(redis.call('HGET', room, ROOM_ADMITTER_FENCE) or '0')
if fence < seen then return {REPLY.fenced, seen} end
local s = redis.call('HMGET', room, ROOM_OPENED, ROOM_LOBBY_COUNT, ROOM_SHUFFLED, ROOM_SERVED,
  ROOM_NEXT, ROOM_SOLD_OUT_TO)
local lobbyCount, shuffled = tonumber(s[2] or '0'), tonumber(s[3] or '0')
if s[1] ~= '1' or shuffled < lobbyCount then return {REPLY.unready} end
local served, nextTicket = tonumber(s[4] or '0'), tonumber(s[5] or '0')
local from = tonumber(s[6] or tostring(served))
if writtenTo > from then
  from = writtenTo
  redis.call('HSET', room, ROOM_SOLD_OUT_TO, from)
elseif not s[6] then
  redis.call('HSET', room, ROOM_SOLD_OUT_TO, from)
end
local last = math.min(nextTicket, from + size)
local reply = {REPLY.batch, from, served}
if last <= from then return reply end
local tickets = {}
for t = from + 1, last do tickets[#tickets + 1] = t end
local users = redis.call('HMGET', line, unpack(tickets))
for i = 1, #users do reply[#reply + 1] = users[i] or '' end
return reply
