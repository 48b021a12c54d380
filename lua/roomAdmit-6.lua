#!lua flags=allow-oom
--[[
  roomAdmit: one tick of a waiting room's admitter. Checks the admitter's fencing token (a holder
  whose lease ran out is refused once a newer one has written), opens the room at its start,
  shuffles the lobby in bounded steps (at most ARGV[10] places per call, so a long lobby
  never blocks the shard for long: Fisher-Yates from the front over a Park-Miller generator seeded
  by ARGV[3] at the opening and kept in the room hash, each step fixing ticket i for good), frees
  the seats of admissions that expired unused, then admits the next tickets in order, only from
  the shuffled prefix: paced by a token bucket of ARGV[4] per second (capacity one second), never
  past ARGV[5] admitted and not yet done, nor past the units left (ARGV[9]) at ARGV[11] units a
  seat, and none while the product is sold out.

  KEYS[1] room hash (fields: includes/roomState.lua)
  KEYS[2] places hash: userId -> ticket (0 until the shuffle reaches it)
  KEYS[3] lobby hash: arrival index 1..n -> userId (emptied by the shuffle)
  KEYS[4] line hash: ticket -> userId
  KEYS[5] active zset: userId -> admission expiry (ms)
  KEYS[6] admitted hash: userId -> admission time (ms)
  ARGV[1] fencing token of the admitter's lease
  ARGV[2] opening (ms since the epoch; 0: at once)
  ARGV[3] shuffle seed, 1..2147483646 (read at the opening only)
  ARGV[4] admissions per second
  ARGV[5] most shoppers admitted and not yet done
  ARGV[6] ms an admission lasts
  ARGV[7] 1 when the product is sold out (admit nobody)
  ARGV[8] seconds the room's keys live
  ARGV[9] units left on sale on the shards that answered (-1: no bound: seats alone bound admission;
          -2: not read, as nobody waited at the last tick: nobody is admitted, and a room with
          shoppers it could admit answers SLEEP_UNITS, to be ticked again with them)
  ARGV[10] most lobby places this call shuffles
  ARGV[11] units an admitted shopper may buy (limitPerUser): admitted and not yet done are at
           most ceil(units left / ARGV[11])
  ARGV[12] the room's count of seats freed by a purchase (`done`) as read before the units left:
           a seat freed since may be of a purchase the units read did not see, so each one counts
           as a seat still taken (under-admits until the next tick, never over)
  ARGV[13] 1 when the room may go to sleep: a tick that admits nobody then says what the room
           waits for (includes/roomState.lua's SLEEP_ values), and a sleep a join or a freed seat
           ends is written to the room hash for the join and seat-done scripts to see

  Returns {ticked, served, next, admitted now, expired now, active, now ms, opened, places left
  to shuffle (0 before the opening), sleep, wake at}: sleep is '' while the room has work (tick
  again at the pace), SLEEP_UNITS, SLEEP_OPENING (wake at the opening, ms), or what the room sleeps
  on (SLEEP_SEAT, SLEEP_JOIN: wake at the first admission's end, ms, 0 when none);
  or {fenced, newer fence} when a newer admitter has written.
]]
local room, places, lobby, line = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local active, admitted = KEYS[5], KEYS[6]
local fence, startsAt, seed = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local rate, maxActive, admittedFor = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local soldOut, ttl, unitsLeft = ARGV[7] == '1', tonumber(ARGV[8]), tonumber(ARGV[9])
local steps, perShopper, doneAtRead = tonumber(ARGV[10]), tonumber(ARGV[11]), tonumber(ARGV[12])
local mayIdle = ARGV[13] == '1'
local unitsRead = unitsLeft ~= -2
--- @replies
--- @include "serverTimeMs"
--- @include "roomState"

local seen = tonumber(redis.call('HGET', room, ROOM_ADMITTER_FENCE) or '0')
if fence < seen then return {REPLY.fenced, seen} end
redis.call('HSET', room, ROOM_ADMITTER_FENCE, fence)
local now = serverTimeMs()

local s = redis.call('HMGET', room, ROOM_OPENED, ROOM_SERVED, ROOM_NEXT, ROOM_CREDIT, ROOM_LAST_AT,
  ROOM_LOBBY_COUNT, ROOM_SHUFFLED, ROOM_RNG, ROOM_DONE, ROOM_ASLEEP)
local opened = s[1] == '1'
local served, nextTicket = tonumber(s[2] or '0'), tonumber(s[3] or '0')
local lobbyCount, shuffled = tonumber(s[6] or '0'), tonumber(s[7] or '0')
local rng = tonumber(s[8] or seed)
if not opened and now >= startsAt then
  -- the line's head is the lobby, tickets 1..lobbyCount; joins from now on take the next ones
  opened, nextTicket, shuffled, rng = true, lobbyCount, 0, seed
  redis.call('HSET', room, ROOM_OPENED, 1, ROOM_NEXT, lobbyCount, ROOM_SERVED, 0, ROOM_OPENED_AT,
    now)
  for _, key in ipairs(KEYS) do redis.call('EXPIRE', key, ttl) end
end
if not opened then
  return {REPLY.ticked, 0, 0, 0, 0, redis.call('ZCARD', active), now, 0, 0, SLEEP_OPENING, startsAt}
end
if shuffled < lobbyCount then
  -- step i draws j in i..lobbyCount, puts the shopper at j in ticket i for good, and the one at i
  -- in the place j left: a uniform permutation, one prefix at a time
  local last = math.min(lobbyCount, shuffled + steps)
  for i = shuffled + 1, last do
    local j = i
    if i < lobbyCount then
      rng = (rng * 48271) % 2147483647
      j = i + (rng % (lobbyCount - i + 1))
    end
    local user = redis.call('HGET', lobby, j)
    if j ~= i then redis.call('HSET', lobby, j, redis.call('HGET', lobby, i)) end
    redis.call('HDEL', lobby, i)
    redis.call('HSET', places, user, i)
    redis.call('HSET', line, i, user)
  end
  shuffled = last
  redis.call('HSET', room, ROOM_SHUFFLED, shuffled, ROOM_RNG, rng)
end
-- admission only from the shuffled prefix (the whole line once the shuffle is done)
local ready = nextTicket
if shuffled < lobbyCount then ready = shuffled end

local expired = redis.call('ZREMRANGEBYSCORE', active, '-inf', now)
local credit = tonumber(s[4] or tostring(rate))
local lastAt = tonumber(s[5] or tostring(now))
credit = math.min(math.max(rate, 1), credit + (now - lastAt) * rate / 1000)
local busy = redis.call('ZCARD', active)
local n = math.min(math.floor(credit), maxActive - busy, ready - served)
local seatsForUnits = n
-- each seat not yet used may buy perShopper units: admit while the units left cover them, the
-- last one maybe short (rounded up, so a last odd unit still finds a buyer)
local freedSinceRead = math.max(0, tonumber(s[9] or '0') - doneAtRead)
if unitsLeft >= 0 then
  seatsForUnits = math.ceil(unitsLeft / perShopper) - busy - freedSinceRead
  n = math.min(n, seatsForUnits)
end
local couldAdmit = n > 0 and not soldOut
if soldOut or not unitsRead or n < 0 then n = 0 end
for _ = 1, n do
  served = served + 1
  local user = redis.call('HGET', line, served)
  if user then
    redis.call('ZADD', active, now + admittedFor, user)
    redis.call('HSET', admitted, user, now)
  end
end
redis.call('HSET', room, ROOM_SERVED, served, ROOM_CREDIT, credit - n, ROOM_LAST_AT, now)
if n > 0 then
  redis.call('EXPIRE', active, ttl)
  redis.call('EXPIRE', admitted, ttl)
end

-- what the room waits for now: nothing while it has work (a shuffle, shoppers it may admit at the
-- pace); asleep once it admits nobody, when the admitter lets it (it lingers awake a while)
local sleep, wakeAt = '', 0
if shuffled < lobbyCount then
  sleep = ''
elseif not unitsRead and couldAdmit then
  sleep = SLEEP_UNITS
elseif mayIdle and n == 0 then
  if nextTicket <= served then
    -- nobody waits; admissions still out end unused at their expiry (abandoned, the gauge down)
    sleep = SLEEP_JOIN
    local first = redis.call('ZRANGE', active, 0, 0, 'WITHSCORES')
    if first[2] then wakeAt = tonumber(first[2]) end
  elseif soldOut then
    sleep = SLEEP_NOTICE
  elseif maxActive - busy <= 0 or (unitsLeft >= 0 and seatsForUnits <= 0) then
    sleep = SLEEP_SEAT
    local first = redis.call('ZRANGE', active, 0, 0, 'WITHSCORES')
    if first[2] then wakeAt = tonumber(first[2]) end
  end
end
-- a join (SLEEP_JOIN) or a freed seat (SLEEP_SEAT) ends this sleep: their scripts read it here
local flag = (sleep == SLEEP_JOIN or sleep == SLEEP_SEAT) and sleep or nil
if flag and s[10] ~= flag then
  redis.call('HSET', room, ROOM_ASLEEP, flag)
elseif not flag and s[10] then
  redis.call('HDEL', room, ROOM_ASLEEP)
end
return {REPLY.ticked, served, nextTicket, n, expired, busy + n, now, 1, lobbyCount - shuffled,
  sleep, wakeAt}
