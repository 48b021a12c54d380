#!lua flags=allow-oom
--[[
  resolveOrder: settles what became of an order whose purchase ended without an answer (a lost
  reply, a crashed API process), at the shopper's home segment, where its deduct writes first:

    sold     the buyer marker lists it
    pending  an open spill claim holds it (its units are being taken elsewhere; the sweeper
             settles the claim if its purchase died)
    voided   neither: it is marked given up, so a deduct of it that arrives late is refused, and
             the answer "not sold" stays true

  KEYS[1] home segment's buyers hash (records/marker.ts)
  KEYS[2] home segment's claims hash (records/claim.ts)
  KEYS[3] the order's void mark
  ARGV[1] user id
  ARGV[2] order id
  ARGV[3] how long the void mark is kept, in seconds

  Returns {sold} | {pending} | {voided}
]]
local buyersKey, claimsKey, voidKey = KEYS[1], KEYS[2], KEYS[3]
local user, orderId, ttl = ARGV[1], ARGV[2], ARGV[3]
--- @replies
--- @include "buyerMarker"
--- @include "spillClaim"

local _, orders = markerRead(redis.call('HGET', buyersKey, user))
if orders and markerHas(orders, orderId) then return {REPLY.sold} end
local claim = redis.call('HGET', claimsKey, user)
if claim and claimRead(claim) == orderId then return {REPLY.pending} end
redis.call('SET', voidKey, 1, 'EX', ttl)
return {REPLY.voided}
