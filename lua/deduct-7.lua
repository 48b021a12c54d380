#!lua flags=allow-oom
--[[
  deduct: the only code that ever changes a segment's stock. One atomic call on one segment
  checks the sale epoch, takes a cell of the shopper's rate-limit bucket when asked (the bucket
  lives in the home segment's slot), checks the sale window (Redis server time), the fencing token,
  the shopper's purchase marker and limit, and the stock; then decrements, records the buyer and
  appends the order to the segment's outbox.

  Modes:
    home   the shopper's home segment (marker lives here). When it lacks the units, a spill claim
           is put in the marker's place instead and SPILL is returned: the caller then takes the
           units from another segment (mode spill) and settles the claim (claimSettle).
    claim  put a spill claim without touching stock (the home segment's lock was busy).
    spill  take units for a claim held at the home segment: no marker check here. The order is
           recorded in this segment's spilled hash (KEYS[6]) with the unit it takes: the home
           marker lives on another segment, maybe another master, so only this record can say
           whether a failover here lost the sale (lua/restock-3.lua, src/orders/reconcile.ts).

  KEYS[1] segment state hash (fields: includes/segmentState.lua)
  KEYS[2] buyers hash: userId -> "<units>:<orderId>,<orderId>,..." (the shopper's orders, oldest
          first; src/inventory/records/marker.ts)
  KEYS[3] claims hash: userId -> "<orderId>|<qty>|<ms>" (an open spill claim; records/claim.ts)
  KEYS[4] outbox stream (fields: records/outbox-entry.ts)
  KEYS[5] this order's void mark (set by resolveOrder when its outcome was given up)
  KEYS[6] spilled hash: orderId -> units, the spill sales this segment gave a unit to (spill mode
          only; dropped at a reseed, an entry taken out by the order's return)
  KEYS[7] the shopper's rate-limit bucket on this route, in this segment's slot (holds a GCRA TAT,
          includes/gcra.lua; lua/rateLimit-1.lua takes from the same key); touched only when
          ARGV[12] > 0
  ARGV[1] mode: home | claim | spill
  ARGV[2] sale epoch the caller believes in
  ARGV[3] fencing token of the segment lock held by the caller, 0 = no lock (lockfree)
  ARGV[4] user id
  ARGV[5] quantity (positive integer)
  ARGV[6] order id (the caller's; unique)
  ARGV[7] product id
  ARGV[8] this segment's index
  ARGV[9] the shopper's home segment index
  ARGV[10] Redis time (ms) of the caller's latest touch of the product in the active set
           (lua/activeTouch-2.lua): the sweeper walks only active products
  ARGV[11] how old that touch may be (ms); older, nothing is written: the caller touches again
  ARGV[12] the bucket's emission interval (us); 0: take no cell (limits off, a spill, or the
           purchase's cell already taken by an earlier call)
  ARGV[13] the bucket's burst

  Returns (every answer after unknown, staleEpoch and untouched ends, when a cell was asked, with
  the bucket's state {taken, remaining, resetUs, retryUs} as one more element)
    {rateLimited, state}          the bucket refused (taken 0): nothing was changed
    {ok, outboxId, remaining}     sold; remaining = stock left in this segment
    {limit, lastOrderId, units}   the shopper already has `units`; more would pass the limit
    {empty, remaining}            this segment lacks the units (spill mode)
    {notStarted, startsAt}        before the sale window (ms)
    {ended, endsAt}               after it (ms)
    {staleFence, lastFence}       a newer lock holder already wrote here
    {staleEpoch, epoch}           the product was reseeded; reload and retry
    {spill, remaining}            claim placed at home; take the units elsewhere
    {claimBusy, claimedOrderId}   a spill of this shopper is still in flight
    {unknown}                     the segment was never seeded
    {voided}                      this order id was given up (resolveOrder): nothing sold
    {untouched}                   the touch (ARGV[10]) is older than its lease: touch, retry
]]
--- @replies
--- @include "serverTimeMs"
--- @include "buyerMarker"
--- @include "spillClaim"
--- @include "segmentState"
--- @include "deductSegment"

return deductSegment(deductInputs())
