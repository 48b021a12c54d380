--[[
  deduct: the only code that ever changes a segment's stock. One atomic call on one segment
  checks the sale epoch, the sale window (Redis server time), the fencing token, the shopper's
  purchase marker and limit, and the stock; then decrements, records the buyer and appends the
  order to the segment's outbox.

  Modes:
    home   the shopper's home segment (marker lives here). When it lacks the units, a spill claim
           is put in the marker's place instead and SPILL is returned: the caller then takes the
           units from another segment (mode spill) and settles the claim (claimSettle).
    claim  put a spill claim without touching stock (the home segment's lock was busy).
    spill  take units for a claim held at the home segment: no marker check here.

  KEYS[1] segment state hash: epoch, stock, sold, startsAt, endsAt, limit, fence
  KEYS[2] buyers hash: userId -> "<units>:<orderId>,<orderId>,..." (the shopper's orders, oldest
          first)
  KEYS[3] claims hash: userId -> "<orderId>|<qty>|<ms>" (an open spill claim)
  KEYS[4] outbox stream
  ARGV[1] mode: home | claim | spill
  ARGV[2] sale epoch the caller believes in
  ARGV[3] fencing token of the segment lock held by the caller, 0 = no lock (lockfree)
  ARGV[4] user id
  ARGV[5] quantity (positive integer)
  ARGV[6] order id (the caller's; unique)
  ARGV[7] product id
  ARGV[8] this segment's index
  ARGV[9] the shopper's home segment index

  Returns
    {0, outboxId, remaining}   OK: sold; remaining = stock left in this segment
    {1, lastOrderId, units}    LIMIT: the shopper already has `units`; more would pass the limit
    {2, remaining}             EMPTY: this segment lacks the units (spill mode)
    {3, startsAt}              NOT_STARTED (ms)
    {4, endsAt}                ENDED (ms)
    {5, lastFence}             STALE_FENCE: a newer lock holder already wrote here
    {6, epoch}                 STALE_EPOCH: the product was reseeded; reload and retry
    {7, remaining}             SPILL: claim placed at home; take the units elsewhere
    {8, claimedOrderId}        CLAIM_BUSY: a spill of this shopper is still in flight
    {9}                        UNKNOWN: the segment was never seeded
]]
--- @include "serverTimeMs"

local s = redis.call('HMGET', KEYS[1], 'epoch', 'stock', 'startsAt', 'endsAt', 'limit', 'fence')
if not s[1] then return {9} end
if s[1] ~= ARGV[2] then return {6, tonumber(s[1])} end
local now = serverTimeMs()
local startsAt, endsAt = tonumber(s[3]), tonumber(s[4])
if startsAt > 0 and now < startsAt then return {3, startsAt} end
if endsAt > 0 and now >= endsAt then return {4, endsAt} end
local fence, lastFence = tonumber(ARGV[3]), tonumber(s[6] or 0)
if fence > 0 and fence < lastFence then return {5, lastFence} end

local mode, user, qty = ARGV[1], ARGV[4], tonumber(ARGV[5])
local stock = tonumber(s[2])
local units, orders = 0, nil
if mode ~= 'spill' then
  local claim = redis.call('HGET', KEYS[3], user)
  if claim then return {8, string.match(claim, '^[^|]*')} end
  local marker = redis.call('HGET', KEYS[2], user)
  if marker then
    local u, list = string.match(marker, '^(%d+):(.*)$')
    units, orders = tonumber(u), list
    if units + qty > tonumber(s[5]) then return {1, string.match(list, '([^,]*)$'), units} end
  elseif qty > tonumber(s[5]) then
    return {1, '', 0}
  end
  if mode == 'claim' or stock < qty then
    redis.call('HSET', KEYS[3], user, ARGV[6] .. '|' .. qty .. '|' .. now)
    return {7, stock}
  end
elseif stock < qty then
  return {2, stock}
end

if fence > lastFence then redis.call('HSET', KEYS[1], 'fence', fence) end
local remaining = redis.call('HINCRBY', KEYS[1], 'stock', -qty)
redis.call('HINCRBY', KEYS[1], 'sold', qty)
if mode == 'home' then
  redis.call('HSET', KEYS[2], user, (units + qty) .. ':' .. (orders and (orders .. ',') or '') .. ARGV[6])
end
local id = redis.call('XADD', KEYS[4], '*',
  'o', ARGV[6], 'p', ARGV[7], 'u', user, 'q', qty, 's', ARGV[8], 'h', ARGV[9], 't', now, 'e', ARGV[2])
return {0, id, remaining}
