-- A waiting room's hash: its line's counters, the opening's shuffle and the admitter's pacing.
-- Field names defined here only; TypeScript: ROOM_FIELD of src/inventory/records/hash-fields.ts
-- (test/lua-records.test.ts holds them equal). The loader folds the constants
-- (src/redis/scripts.ts).
-- the last ticket given (HINCRBY by a join after the opening)
local ROOM_NEXT = 'next'
-- every ticket up to this one is admitted
local ROOM_SERVED = 'served'
-- 1 once the room opened (its lobby shuffled into the line's head)
local ROOM_OPENED = 'opened'
local ROOM_OPENED_AT = 'openedAt'
-- shoppers who joined before the opening
local ROOM_LOBBY_COUNT = 'pre'
-- lobby places shuffled into tickets so far, and the shuffle's generator state
local ROOM_SHUFFLED = 'shuffled'
local ROOM_RNG = 'rng'
-- the newest admitter fencing token that wrote
local ROOM_ADMITTER_FENCE = 'admitterFence'
-- the admission pacing's token bucket: its credit and when it was last filled (ms)
local ROOM_CREDIT = 'credit'
local ROOM_LAST_AT = 'lastAt'
-- seats freed by purchases (HINCRBY with the seat's ZREM): the admitter's units read is bounded by it
local ROOM_DONE = 'done'
-- what a sleeping room waits for, when a join or a freed seat wakes it (the next tick clears it)
local ROOM_ASLEEP = 'asleep'
-- admissions ending up to this time (ms) were told they are about to end (the lead's edge)
local ROOM_WARNED_TO = 'warnedTo'
-- sold out for good: the tickets up to this one were told (their events written)
local ROOM_SOLD_OUT_TO = 'soldOutTo'

-- A sleeping room's wait (ROOM_ASLEEP's values, and the admit script's reply): nobody in line, the
-- next join; every seat taken, a freed seat (or the first admission's end); sold out or paused, a
-- notice (a return, a resume).
local SLEEP_JOIN = 'join'
local SLEEP_SEAT = 'seat'
local SLEEP_NOTICE = 'notice'
-- not a sleep: the room is not open yet (ticked again at its opening), or it has shoppers to
-- admit and was not given the units left (ticked again at once with them)
local SLEEP_OPENING = 'opening'
local SLEEP_UNITS = 'units'

-- what a shopper's place is answered with, as numbers: served, opened (0/1), lobby length
local function roomPlaceCounters(room)
  local s = redis.call('HMGET', room, ROOM_SERVED, ROOM_OPENED, ROOM_LOBBY_COUNT)
  return tonumber(s[1] or '0'), tonumber(s[2] or '0'), tonumber(s[3] or '0')
end
