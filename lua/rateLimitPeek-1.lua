--[[
  rateLimitPeek: whether one request would pass a GCRA limit now (lua/rateLimit-1.lua), without
  taking it. For limits that count only some requests (wrong admin tokens): every attempt asks,
  only a counted one takes, so an address past the limit is refused whatever it sends.

  KEYS[1] the limit's key (holds the TAT in microseconds)
  ARGV[1] emission interval in microseconds (period / rate)
  ARGV[2] burst

  Returns
    {allowed, 0}
    {limited, retryUs}           a request would be refused: it would pass in retryUs
]]
local key = KEYS[1]
local interval, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
--- @replies

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local tat = math.max(tonumber(redis.call('GET', key) or now), now)
local allowAt = tat + interval - interval * burst
if now < allowAt then
  return {REPLY.limited, allowAt - now}
end
return {REPLY.allowed, 0}
