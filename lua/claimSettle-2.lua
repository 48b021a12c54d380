#!lua flags=allow-oom
--[[
  claimSettle: ends a spill claim at the shopper's home segment.

  KEYS[1] home segment's buyers hash (see deduct)
  KEYS[2] home segment's claims hash
  ARGV[1] user id
  ARGV[2] order id of the claim
  ARGV[3] finalise | release: finalise adds the claim's units to the marker (the spill deduct
          sold them); release just drops the claim (nothing was sold)

  Returns
    {settled, units}  settled; units = the shopper's units after it
    {noClaim}         no such claim (already settled by the sweeper, or never placed): nothing
                      changed
]]
local buyersKey, claimsKey = KEYS[1], KEYS[2]
local user, orderId, outcome = ARGV[1], ARGV[2], ARGV[3]
--- @replies
--- @include "buyerMarker"
--- @include "spillClaim"

local claim = redis.call('HGET', claimsKey, user)
if not claim then return {REPLY.noClaim} end
local claimedOrder, qty = claimRead(claim)
if claimedOrder ~= orderId then return {REPLY.noClaim} end
redis.call('HDEL', claimsKey, user)
local units, orders = markerRead(redis.call('HGET', buyersKey, user))
if outcome == 'finalise' then
  units = units + qty
  redis.call('HSET', buyersKey, user, markerWrite(units, markerAppend(orders, orderId)))
end
return {REPLY.settled, units}
