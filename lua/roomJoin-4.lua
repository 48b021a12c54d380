--[[
  roomJoin: a shopper joins a product's waiting room, once. Before the opening the place is in the
  lobby (ticket 0: shuffled into a ticket by roomAdmit at the opening); after it, the next
  ticket in arrival order. Joining again answers the same place: one place per shopper.

  KEYS[1] room hash (fields: includes/roomState.lua)
  KEYS[2] places hash: userId -> ticket (0 while in the lobby)
  KEYS[3] lobby hash: arrival index 1..n -> userId (until the opening's shuffle)
  KEYS[4] line hash: ticket -> userId
  ARGV[1] userId
  ARGV[2] seconds the room's keys live (the sale's end plus a margin)
  ARGV[3] most places the room holds: a new shopper past it is refused, nothing written

  Returns {joined (a new place), held (the shopper's place already) or full (refused: the line is
  full, nothing written), ticket, served, opened (0/1), lobby length, woke}: woke is 1 when the
  shopper waits in a room asleep on a join (its admitter let go of it: the joining process wakes
  it); a join again answers it too until a tick clears the sleep, so a wake lost with its process
  is sent again.
]]
local room, places, lobby, line = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local user, ttl, cap = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
--- @replies
--- @include "roomState"

-- the shopper waits (ticket past served) in an open room asleep until a join
local function wakes(ticket, served, opened)
  if opened == 1 and ticket > served and redis.call('HGET', room, ROOM_ASLEEP) == SLEEP_JOIN then
    return 1
  end
  return 0
end

local held = redis.call('HGET', places, user)
if held then
  local served, opened, lobbyCount = roomPlaceCounters(room)
  local ticket = tonumber(held)
  return {REPLY.held, ticket, served, opened, lobbyCount, wakes(ticket, served, opened)}
end
local served, opened, lobbyCount = roomPlaceCounters(room)
if redis.call('HLEN', places) >= cap then return {REPLY.full, 0, served, opened, lobbyCount, 0} end
local ticket = 0
if opened == 1 then
  ticket = redis.call('HINCRBY', room, ROOM_NEXT, 1)
  redis.call('HSET', line, ticket, user)
else
  lobbyCount = redis.call('HINCRBY', room, ROOM_LOBBY_COUNT, 1)
  redis.call('HSET', lobby, lobbyCount, user)
end
redis.call('HSET', places, user, ticket)
for _, key in ipairs(KEYS) do redis.call('EXPIRE', key, ttl) end
return {REPLY.joined, ticket, served, opened, lobbyCount, wakes(ticket, served, opened)}
