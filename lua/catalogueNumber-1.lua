--[[
  catalogueNumber: the product's catalogue number, given once (the same product always gets the
  same one). An order id carries it (src/inventory/order-ids.ts), so an order is found from its id
  without walking the catalogue.

  KEYS[1] catalogue hash (fields: includes/catalogueHash.lua): n:<number> -> product id,
          p:<product id> -> number, seq -> last given
  ARGV[1] product id

  Returns the number (1, 2, ...).
]]
local catalogueKey = KEYS[1]
local productId = ARGV[1]

--- @include "catalogueHash"

local n = redis.call('HGET', catalogueKey, CATALOGUE_PRODUCT .. productId)
if n then return tonumber(n) end
n = redis.call('HINCRBY', catalogueKey, CATALOGUE_SEQ, 1)
redis.call('HSET', catalogueKey, CATALOGUE_NUMBER .. n, productId, CATALOGUE_PRODUCT .. productId,
  n)
return n
