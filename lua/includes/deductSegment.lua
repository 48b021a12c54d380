-- The deduct's checks and writes on one segment, shared by lua/deduct-6.lua (lock-free, or under
-- a held segment lock) and lua/deductFree-10.lua (a free segment lock taken and given back in the
-- same call). The including script defines REPLY (the deduct's table) and passes its KEYS and
-- ARGV through; see lua/deduct-6.lua for what each means and what is returned.
--- @include "serverTimeMs"
--- @include "buyerMarker"
--- @include "spillClaim"
--- @include "segmentState"

local function deductSegment(stateKey, buyersKey, claimsKey, outboxKey, voidKey, spilledKey, mode,
                             epoch, fence, user, qty, orderId, productId, segment, home,
                             touchedAt, touchLease)
  local segEpoch, stockText, startsText, endsText, limitText, fenceText, payWithin =
    stateForDeduct(stateKey)
  if not segEpoch then return {REPLY.unknown} end
  if segEpoch ~= epoch then return {REPLY.staleEpoch, tonumber(segEpoch)} end
  local now = serverTimeMs()
  -- every write below is work for the sweeper: only while the product is surely in its set
  if now - touchedAt > touchLease then return {REPLY.untouched} end
  local startsAt, endsAt, limit = tonumber(startsText), tonumber(endsText), tonumber(limitText)
  if startsAt > 0 and now < startsAt then return {REPLY.notStarted, startsAt} end
  if endsAt > 0 and now >= endsAt then return {REPLY.ended, endsAt} end
  local lastFence = tonumber(fenceText or 0)
  if fence > 0 and fence < lastFence then return {REPLY.staleFence, lastFence} end

  local stock = tonumber(stockText)
  local units, orders = 0, nil
  if mode ~= 'spill' then
    if redis.call('EXISTS', voidKey) == 1 then return {REPLY.voided} end
    local claim = redis.call('HGET', claimsKey, user)
    if claim then return {REPLY.claimBusy, (claimRead(claim))} end
    units, orders = markerRead(redis.call('HGET', buyersKey, user))
    if units + qty > limit then return {REPLY.limit, orders and markerLast(orders) or '', units} end
    if mode == 'claim' or stock < qty then
      redis.call('HSET', claimsKey, user, claimWrite(orderId, qty, now))
      return {REPLY.spill, stock}
    end
  elseif stock < qty then
    return {REPLY.empty, stock}
  end

  if fence > lastFence then stateSetFence(stateKey, fence) end
  local remaining = stateTake(stateKey, qty)
  if mode == 'home' then
    redis.call('HSET', buyersKey, user, markerWrite(units + qty, markerAppend(orders, orderId)))
  elseif mode == 'spill' then
    -- the home marker is on another segment: only this record, written with the unit, can tell
    -- a return or reconciliation that this segment still holds the sale after a failover
    redis.call('HSET', spilledKey, orderId, qty)
  end
  local id = redis.call('XADD', outboxKey, '*',
    'o', orderId, 'p', productId, 'u', user, 'q', qty, 's', segment, 'h', home, 't', now, 'e', epoch,
    'w', payWithin or '0')
  return {REPLY.ok, id, remaining}
end
