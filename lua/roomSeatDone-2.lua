#!lua flags=allow-oom
--[[
  roomSeatDone: a shopper who bought is done with their admission: their seat goes to the next in
  line, and the room counts it (the admitter bounds admission by a units read that may not have
  seen this purchase yet: lua/roomAdmit-6.lua's doneAtRead). Past maxmemory too: a purchase's own
  write (docs/catalogue.md#redis-memory).

  KEYS[1] the room's admitted seats (zset: userId -> admission's end)
  KEYS[2] the room hash (fields: includes/roomState.lua)
  ARGV[1] userId

  Returns {the room's freed-seat count after this one, woke}: woke is 1 when a seat was freed in
  a room asleep on its seats (every one was taken: the purchasing process wakes it).
]]
--- @include "roomState"

local freed = redis.call('ZREM', KEYS[1], ARGV[1])
local done = redis.call('HINCRBY', KEYS[2], ROOM_DONE, 1)
local woke = 0
if freed == 1 and redis.call('HGET', KEYS[2], ROOM_ASLEEP) == SLEEP_SEAT then woke = 1 end
return {done, woke}
