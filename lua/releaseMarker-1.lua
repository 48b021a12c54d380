#!lua flags=allow-oom
--[[
  releaseMarker: the buyer-limit policy for a returned order (RETURN_FREES_LIMIT, on by default):
  takes the order out of its buyer's marker, so a buyer whose order was cancelled or expired may
  buy again. Idempotent: an order the marker does not list (released before, or of an earlier
  sale epoch whose markers are gone) changes nothing.

  KEYS[1] buyers hash of the order's home segment: userId -> "<units>:<orderId>,..."
  ARGV[1] user id
  ARGV[2] order id
  ARGV[3] units of that order

  Returns 1 when released, 0 when the marker did not list the order.
]]
local buyersKey = KEYS[1]
local user, orderId, qty = ARGV[1], ARGV[2], tonumber(ARGV[3])
--- @include "buyerMarker"

local units, list = markerRead(redis.call('HGET', buyersKey, user))
if not list then return 0 end
local kept, found = {}, false
for id in string.gmatch(list, '[^,]+') do
  if id == orderId and not found then found = true else kept[#kept + 1] = id end
end
if not found then return 0 end
local left = math.max(0, units - qty)
if #kept == 0 then
  redis.call('HDEL', buyersKey, user)
else
  redis.call('HSET', buyersKey, user, markerWrite(left, table.concat(kept, ',')))
end
return 1
