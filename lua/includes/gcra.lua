-- GCRA (generic cell rate algorithm): a leaky bucket kept as one number, the theoretical arrival
-- time (TAT, microseconds). `interval` is the microseconds between cells at the sustained rate
-- (period / rate), `burst` the cells a full bucket holds. Written once, used by lua/rateLimit-1.lua
-- (a take on its own, or a lease of several cells) and by the deduct's per-shopper bucket
-- (includes/deductSegment.lua), so the two can never disagree about a bucket.
--
-- gcraTake(key, interval, burst, now, want[, read]) takes up to `want` cells at `now`
-- (microseconds, the caller's Redis TIME), as many as the bucket holds: over any span of T the
-- bucket gives at most burst + floor(T / interval) cells, however they are asked for. Returns
--   taken      cells taken (0: refused, nothing written)
--   remaining  cells left in the bucket after the take
--   resetUs    until the bucket is full again
--   retryUs    until one cell more would pass: refused, or the bucket emptied by this take (0 when
--              it holds more)
local function gcraTake(key, interval, burst, now, want, read)
  local tolerance = interval * burst
  -- `read`: the key's value as the caller already read it (false: no key); nil: read it here
  if read == nil then read = redis.call('GET', key) end
  local tat = math.max(tonumber(read or now), now)
  local free = math.floor((now + tolerance - tat) / interval)
  if free < 1 then return 0, 0, tat - now, tat + interval - tolerance - now end
  local taken = math.min(want, free)
  local nextTat = tat + taken * interval
  -- kept until the bucket is full again, then it is as if never used
  redis.call('SET', key, string.format('%.0f', nextTat), 'PX', math.ceil((nextTat - now) / 1000) + 1)
  return taken, math.floor((tolerance - (nextTat - now)) / interval), nextTat - now,
    math.max(0, nextTat + interval - tolerance - now)
end
