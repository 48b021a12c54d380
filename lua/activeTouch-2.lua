#!lua flags=allow-oom
--[[
  activeTouch: keeps a product in the active set (the products the sweeper walks) until at least
  max(now, ARGV[2]) + ARGV[1]. A purchase passes the returned time to deduct, which refuses a touch
  older than its lease: so any work a deduct creates has a touch no older than the lease, and the
  sweeper, which archives only products whose time has passed by more than that (activeArchive),
  always sees that work first (src/inventory/catalogue/active-set.ts).

  KEYS[1] active zset: product id -> ms until which it stays
  KEYS[2] touches zset: product id -> the Redis time of its last touch (the sweeper reads no
          segment of a product untouched since it found it quiet; same slot as KEYS[1])
  ARGV[1] product id
  ARGV[2] quiet period (ms) kept after the touch
  ARGV[3] ms the product stays at least until (its sale's start or end), before the quiet period

  Returns the Redis server time of the touch (ms).
]]
local activeKey = KEYS[1]
local productId, quietMs, floorMs = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
--- @include "serverTimeMs"

local now = serverTimeMs()
redis.call('ZADD', activeKey, 'GT', math.max(now, floorMs) + quietMs, productId)
redis.call('ZADD', KEYS[2], 'GT', now, productId)
return now
