--[[
  claimSettle: ends a spill claim at the shopper's home segment.

  KEYS[1] home segment's buyers hash (see deduct)
  KEYS[2] home segment's claims hash
  ARGV[1] user id
  ARGV[2] order id of the claim
  ARGV[3] finalise | release: finalise adds the claim's units to the marker (the spill deduct
          sold them); release just drops the claim (nothing was sold)

  Returns
    {0, units}  settled; units = the shopper's units after it
    {1}         no such claim (already settled by the sweeper, or never placed): nothing changed
]]
local claim = redis.call('HGET', KEYS[2], ARGV[1])
if not claim then return {1} end
local orderId, qty = string.match(claim, '^([^|]*)|(%d+)|')
if orderId ~= ARGV[2] then return {1} end
redis.call('HDEL', KEYS[2], ARGV[1])
local units, orders = 0, nil
local marker = redis.call('HGET', KEYS[1], ARGV[1])
if marker then
  local u, list = string.match(marker, '^(%d+):(.*)$')
  units, orders = tonumber(u), list
end
if ARGV[3] == 'finalise' then
  units = units + tonumber(qty)
  redis.call('HSET', KEYS[1], ARGV[1], units .. ':' .. (orders and (orders .. ',') or '') .. orderId)
end
return {0, units}
