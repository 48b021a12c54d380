--[[
  roomJoin: a shopper joins a product's waiting room, once. Before the opening the place is in the
  pre-queue (ticket 0: shuffled into a ticket by roomAdmit at the opening); after it, the next
  ticket in arrival order. Joining again answers the same place: one place per shopper.

  KEYS[1] room hash (next, served, opened, pre, admitterFence, credit, lastAt)
  KEYS[2] places hash: userId -> ticket (0 while in the pre-queue)
  KEYS[3] pre-queue hash: arrival index 1..pre -> userId (until the opening's shuffle)
  KEYS[4] line hash: ticket -> userId
  ARGV[1] userId
  ARGV[2] seconds the room's keys live (the sale's end plus a margin)
  ARGV[3] most places the room holds: a new shopper past it is refused, nothing written

  Returns {joined (1 new, 0 already there, -1 refused: the line is full), ticket, served,
  opened (0/1), pre-queue length}.
]]
local room, places, pre, line = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local user, ttl, cap = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])

local function state()
  local s = redis.call('HMGET', room, 'served', 'opened', 'pre')
  return tonumber(s[1] or '0'), tonumber(s[2] or '0'), tonumber(s[3] or '0')
end

local held = redis.call('HGET', places, user)
if held then
  local served, opened, preCount = state()
  return {0, tonumber(held), served, opened, preCount}
end
local served, opened, preCount = state()
if redis.call('HLEN', places) >= cap then return {-1, 0, served, opened, preCount} end
local ticket = 0
if opened == 1 then
  ticket = redis.call('HINCRBY', room, 'next', 1)
  redis.call('HSET', line, ticket, user)
else
  preCount = redis.call('HINCRBY', room, 'pre', 1)
  redis.call('HSET', pre, preCount, user)
end
redis.call('HSET', places, user, ticket)
for _, key in ipairs(KEYS) do redis.call('EXPIRE', key, ttl) end
return {1, ticket, served, opened, preCount}
