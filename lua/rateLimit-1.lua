--[[
  rateLimit: one request against a GCRA limit (generic cell rate algorithm: a leaky bucket kept as
  one number, the theoretical arrival time). `rate` requests per `period`, bursts of `burst`.
  Every API process shares the key, so the limit holds across processes; one key per limit, so
  it is one Redis Cluster slot. Time is Redis server time (one clock for every process).

  KEYS[1] the limit's key (a user's or a client address's), holds the TAT in microseconds
  ARGV[1] emission interval: microseconds between requests at the sustained rate (period / rate)
  ARGV[2] burst: requests allowed at once from a full bucket

  Returns
    {allowed, remaining, resetUs}            remaining in the bucket, and when it is full again
    {limited, 0, resetUs, retryUs}           refused: retry in retryUs
]]
local key = KEYS[1]
local interval, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
--- @replies

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local tolerance = interval * burst
local tat = math.max(tonumber(redis.call('GET', key) or now), now)
local nextTat = tat + interval
local allowAt = nextTat - tolerance
if now < allowAt then
  return {REPLY.limited, 0, tat - now, allowAt - now}
end
-- kept until the bucket is full again, then it is as if never used
redis.call('SET', key, string.format('%.0f', nextTat), 'PX', math.ceil((nextTat - now) / 1000) + 1)
return {REPLY.allowed, math.floor((tolerance - (nextTat - now)) / interval), nextTat - now}
