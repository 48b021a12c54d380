--[[
  activeArchive: takes a product out of the active set, only if its time there is still the one
  the sweeper read before it found the product without work (a touch since then keeps it).

  KEYS[1] active zset: product id -> ms until which it stays
  ARGV[1] product id
  ARGV[2] the score the sweeper read

  Returns 1 when archived, 0 when it was touched meanwhile (or is gone already).
]]
local activeKey = KEYS[1]
local productId, expected = ARGV[1], ARGV[2]

local score = redis.call('ZSCORE', activeKey, productId)
if not score or tonumber(score) ~= tonumber(expected) then return 0 end
redis.call('ZREM', activeKey, productId)
return 1
