#!lua flags=allow-oom
--[[
  restock: puts the units of a returned order back on sale in the segment they came from, once:
  a cancelled or expired order's always; a refunded order's only while its sale runs (ARGV[5]).
  The order id is recorded, so a retried job (or the sweep after a crash) cannot return them
  twice. Only PostgreSQL's conditional transition decides that an order is returned; this script
  only makes the return happen exactly once.

  Whether the segment still holds the sale: a home sale asks its home segment first
  (lua/saleHeld-2.lua, ARGV[4]); a spill sale is asked here, in the spilled hash the deduct wrote
  with the unit (KEYS[3]), since its home marker lives on another segment that a failover of this
  one leaves untouched. A sale not held was lost before its return: the unit is already back in
  stock here, so returning it would put it on sale twice. An epoch an older version seeded
  recorded no spill (stateRecordsSpills false): its spill sales are trusted, as that version did,
  so a sale running across an upgrade gets its units back.

  A refund's units come back only to a sale that still runs: its epoch is the segment's and the
  segment's end (endsAt) is ahead on Redis's clock, read in this script, so a refund racing the
  end adds its units before it or not at all. After the end (or a reseed) nothing is recorded:
  the units stay sold, and a retry answers the same.

  KEYS[1] segment state hash (the segment whose stock the order took; includes/segmentState.lua)
  KEYS[2] returned hash: orderId -> units returned (never emptied: an old order stays refused)
  KEYS[3] spilled hash: orderId -> units of the spill sales this segment holds (lua/deduct-7.lua);
          a returned spill sale leaves it, the returned hash records it from then on
  ARGV[1] the order's sale epoch
  ARGV[2] order id
  ARGV[3] units
  ARGV[4] home sale: 1 when its home segment still holds the sale (lua/saleHeld-2.lua), else 0;
          spill sale: "spill" (KEYS[3] decides, if this epoch records spills)
  ARGV[5] "refund": only while the sale runs; "" (a cancel, an expiry): whenever

  Returns
    {restocked, stock}    back on sale; stock = this segment's stock now
    {already}             returned before: nothing changes
    {staleEpoch, epoch}   the product was reseeded since: the new sale has its own stock, so the
                          units are recorded as returned and not added
    {lost}                the sale was lost before its return: recorded as returned with 0 units
                          (reconciliation names it a lost sale closed), nothing added
    {ended}               a refund after its sale's end (or a reseed): nothing recorded or added
]]
local stateKey, returnedKey, spilledKey = KEYS[1], KEYS[2], KEYS[3]
local epoch, orderId, qty, held = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4]
local whileRunning = ARGV[5] == 'refund'
--- @replies
--- @include "segmentState"
--- @include "serverTimeMs"

if redis.call('HEXISTS', returnedKey, orderId) == 1 then return {REPLY.already} end
local current = stateEpoch(stateKey)
if whileRunning and (current ~= epoch or stateEnded(stateKey, serverTimeMs())) then
  return {REPLY.ended}
end
if current ~= epoch then
  redis.call('HSET', returnedKey, orderId, qty)
  return {REPLY.staleEpoch, tonumber(current or 0)}
end
if held == 'spill' then
  held = tostring(redis.call('HDEL', spilledKey, orderId))
  if held == '0' and not stateRecordsSpills(stateKey) then held = '1' end
end
if held ~= '1' then
  redis.call('HSET', returnedKey, orderId, 0)
  return {REPLY.lost}
end
redis.call('HSET', returnedKey, orderId, qty)
return {REPLY.restocked, stateReturn(stateKey, qty)}
