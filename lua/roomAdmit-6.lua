--[[
  roomAdmit: one tick of a waiting room's admitter. Checks the admitter's fencing token (a holder
  whose lease ran out is refused once a newer one has written), opens the room at its start
  (the pre-queue shuffled once, Fisher-Yates over a Park-Miller generator seeded by ARGV[3], into
  tickets 1..k), frees the seats of admissions that expired unused, then admits the next tickets
  in order: paced by a token bucket of ARGV[4] per second (capacity one second), never past
  ARGV[5] admitted and not yet done, nor past the units left (ARGV[9]) less those seats, and none
  while the product is sold out.

  KEYS[1] room hash (next, served, opened, pre, admitterFence, credit, lastAt, openedAt)
  KEYS[2] places hash: userId -> ticket
  KEYS[3] pre-queue list
  KEYS[4] line hash: ticket -> userId
  KEYS[5] active zset: userId -> admission expiry (ms)
  KEYS[6] admitted hash: userId -> admission time (ms)
  ARGV[1] fencing token of the admitter's lease
  ARGV[2] opening (ms since the epoch; 0: at once)
  ARGV[3] shuffle seed, 1..2147483646
  ARGV[4] admissions per second
  ARGV[5] most shoppers admitted and not yet done
  ARGV[6] ms an admission lasts
  ARGV[7] 1 when the product is sold out (admit nobody)
  ARGV[8] seconds the room's keys live
  ARGV[9] units left on sale (-1: unknown, a shard did not answer: seats alone bound admission)

  Returns {1, served, next, admitted now, expired now, active, now ms, opened}
  or {0, newer fence} when a newer admitter has written.
]]
local room, places, pre, line, active, admitted = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local fence, startsAt, seed = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local rate, maxActive, admittedFor = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local soldOut, ttl, unitsLeft = ARGV[7] == '1', tonumber(ARGV[8]), tonumber(ARGV[9])
--- @include "serverTimeMs"

local seen = tonumber(redis.call('HGET', room, 'admitterFence') or '0')
if fence < seen then return {0, seen} end
redis.call('HSET', room, 'admitterFence', fence)
local now = serverTimeMs()

local s = redis.call('HMGET', room, 'opened', 'served', 'next', 'credit', 'lastAt')
local opened = s[1] == '1'
local served, nextTicket = tonumber(s[2] or '0'), tonumber(s[3] or '0')
if not opened and now >= startsAt then
  local users = redis.call('LRANGE', pre, 0, -1)
  local k = #users
  for i = k, 2, -1 do
    seed = (seed * 48271) % 2147483647
    local j = (seed % i) + 1
    users[i], users[j] = users[j], users[i]
  end
  for i = 1, k do
    redis.call('HSET', places, users[i], i)
    redis.call('HSET', line, i, users[i])
  end
  redis.call('DEL', pre)
  nextTicket = k
  opened = true
  redis.call('HSET', room, 'opened', 1, 'next', k, 'served', 0, 'openedAt', now)
  for _, key in ipairs(KEYS) do redis.call('EXPIRE', key, ttl) end
end
if not opened then
  return {1, 0, 0, 0, 0, redis.call('ZCARD', active), now, 0}
end

local expired = redis.call('ZREMRANGEBYSCORE', active, '-inf', now)
local credit = tonumber(s[4] or tostring(rate))
local lastAt = tonumber(s[5] or tostring(now))
credit = math.min(math.max(rate, 1), credit + (now - lastAt) * rate / 1000)
local busy = redis.call('ZCARD', active)
local n = math.min(math.floor(credit), maxActive - busy, nextTicket - served)
if unitsLeft >= 0 then n = math.min(n, unitsLeft - busy) end
if soldOut or n < 0 then n = 0 end
for _ = 1, n do
  served = served + 1
  local user = redis.call('HGET', line, served)
  if user then
    redis.call('ZADD', active, now + admittedFor, user)
    redis.call('HSET', admitted, user, now)
  end
end
redis.call('HSET', room, 'served', served, 'credit', credit - n, 'lastAt', now)
if n > 0 then
  redis.call('EXPIRE', active, ttl)
  redis.call('EXPIRE', admitted, ttl)
end
return {1, served, nextTicket, n, expired, busy + n, now, 1}
