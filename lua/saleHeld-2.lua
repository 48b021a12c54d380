--[[
  saleHeld: whether an order's home segment still holds its sale, asked before its return
  (lua/restock-3.lua). The home segment is where every deduct writes first (the buyer marker, or
  the spill claim the marker replaces), atomically with the unit taken when the order sold from
  home. A failover to a replica that never received the deduct leaves neither: the unit is already
  back in stock there, so returning it would put it on sale twice.

  Read-only. An order leaves its marker only through releaseMarker, which a return runs after its
  restock is recorded: a return that finds the marker gone because an earlier attempt released it
  meets that record first (restock answers already), never a double return.

  KEYS[1] home segment's buyers hash (records/marker.ts)
  KEYS[2] home segment's claims hash (records/claim.ts)
  ARGV[1] user id
  ARGV[2] order id

  Returns 1 when the marker lists the order or an open spill claim is for it, else 0.
]]
local buyersKey, claimsKey = KEYS[1], KEYS[2]
local user, orderId = ARGV[1], ARGV[2]
--- @include "buyerMarker"
--- @include "spillClaim"

local _, orders = markerRead(redis.call('HGET', buyersKey, user))
if orders and markerHas(orders, orderId) then return 1 end
local claim = redis.call('HGET', claimsKey, user)
if claim and claimRead(claim) == orderId then return 1 end
return 0
