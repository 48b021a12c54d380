-- The deduct's checks and writes on one segment, shared by lua/deduct-7.lua (lock-free, or under
-- a held segment lock), lua/deductFree-11.lua (a free segment lock taken and given back in the
-- same call) and the keyed deducts (lua/deductKeyed-10.lua, deductKeyedFree-14.lua). The including
-- script defines REPLY (the deduct's table). Every deduct script takes the same KEYS[1..7] and
-- ARGV[1..13] (lua/deduct-7.lua says what each means and what is returned): deductInputs() reads
-- them into two tables, `keys` and `args`, by name.
--
-- The shopper's rate-limit bucket is keys.rate (in this segment's slot), args.rateInterval in
-- microseconds (0: no bucket to take) and args.rateBurst. It is taken after the answers that make
-- the caller call again (unknown, staleEpoch, untouched: a purchase never takes it twice) and
-- before anything is written: refused, the call answers rateLimited and changes nothing. Every
-- answer after the take carries the bucket's state as a last element, {taken, remaining,
-- resetUs, retryUs} (includes/gcra.lua).
-- `hooks` (optional, each field too):
--   takeLock     runs right after the bucket: it returns the fence to deduct under and whether
--                this order's void mark exists (includes/freeLock.lua reads it with the lock's
--                keys), or nil when the segment's lock is contended (answered contended, the
--                bucket's state with it)
--   voidSeen     the void mark's EXISTS already read by the caller's own takeLock
--   rateRead     the bucket's value as the caller read it (false: no bucket), so a keyed call
--                reads it with the key's record in one MGET
--   beforeSpill  runs before a spill claim is written: a reply it returns is answered instead,
--                nothing written (the keyed call's cap)
--- @include "serverTimeMs"
--- @include "buyerMarker"
--- @include "spillClaim"
--- @include "segmentState"
--- @include "gcra"

-- an answer given after the bucket was taken carries its state
local function rated(reply, rate)
  if rate then reply[#reply + 1] = rate end
  return reply
end

local function deductInputs()
  return {
    state = KEYS[1], buyers = KEYS[2], claims = KEYS[3], outbox = KEYS[4], void = KEYS[5],
    spilled = KEYS[6], rate = KEYS[7],
  }, {
    mode = ARGV[1], epoch = ARGV[2], fence = tonumber(ARGV[3]), user = ARGV[4],
    qty = tonumber(ARGV[5]), orderId = ARGV[6], productId = ARGV[7], segment = ARGV[8],
    home = ARGV[9], touchedAt = tonumber(ARGV[10]), touchLease = tonumber(ARGV[11]),
    rateInterval = tonumber(ARGV[12]), rateBurst = tonumber(ARGV[13]),
  }
end

local function deductSegment(keys, args, hooks)
  local takeLock, voidSeen, rateRead, beforeSpill
  if hooks then
    takeLock, voidSeen, rateRead, beforeSpill =
      hooks.takeLock, hooks.voidSeen, hooks.rateRead, hooks.beforeSpill
  end
  local stateKey, buyersKey, claimsKey = keys.state, keys.buyers, keys.claims
  local user, qty, orderId, mode = args.user, args.qty, args.orderId, args.mode
  local epoch, fence = args.epoch, args.fence
  local segEpoch, stockText, startsText, endsText, limitText, fenceText, payWithin, soldText =
    stateForDeduct(stateKey)
  if not segEpoch then return {REPLY.unknown} end
  if segEpoch ~= epoch then return {REPLY.staleEpoch, tonumber(segEpoch)} end
  local nowUs = serverTimeUs()
  local now = math.floor(nowUs / 1000)
  -- every write below is work for the sweeper: only while the product is surely in its set
  if now - args.touchedAt > args.touchLease then return {REPLY.untouched} end
  local rate = nil
  if args.rateInterval > 0 then
    local taken, remaining, resetUs, retryUs = gcraTake(keys.rate, args.rateInterval,
      args.rateBurst, nowUs, 1, rateRead)
    rate = {taken, remaining, resetUs, retryUs}
    if taken == 0 then return {REPLY.rateLimited, rate} end
  end
  if takeLock then
    fence, voidSeen = takeLock()
    if not fence then return rated({REPLY.contended}, rate) end
  end
  local startsAt, endsAt, limit = tonumber(startsText), tonumber(endsText), tonumber(limitText)
  if startsAt > 0 and now < startsAt then return rated({REPLY.notStarted, startsAt}, rate) end
  if endsAt > 0 and now >= endsAt then return rated({REPLY.ended, endsAt}, rate) end
  local lastFence = tonumber(fenceText or 0)
  if fence > 0 and fence < lastFence then return rated({REPLY.staleFence, lastFence}, rate) end

  local stock = tonumber(stockText)
  local units, orders = 0, nil
  if mode ~= 'spill' then
    if (voidSeen or redis.call('EXISTS', keys.void)) == 1 then
      return rated({REPLY.voided}, rate)
    end
    local claim = redis.call('HGET', claimsKey, user)
    if claim then return rated({REPLY.claimBusy, (claimRead(claim))}, rate) end
    units, orders = markerRead(redis.call('HGET', buyersKey, user))
    if units + qty > limit then
      return rated({REPLY.limit, orders and markerLast(orders) or '', units}, rate)
    end
    if mode == 'claim' or stock < qty then
      local stop = beforeSpill and beforeSpill()
      if stop then return rated(stop, rate) end
      redis.call('HSET', claimsKey, user, claimWrite(orderId, qty, now))
      return rated({REPLY.spill, stock}, rate)
    end
  elseif stock < qty then
    return rated({REPLY.empty, stock}, rate)
  end

  local remaining = stateTake(stateKey, stock, tonumber(soldText or 0), qty,
    fence > lastFence and fence or nil)
  if mode == 'home' then
    redis.call('HSET', buyersKey, user, markerWrite(units + qty, markerAppend(orders, orderId)))
  elseif mode == 'spill' then
    -- the home marker is on another segment: only this record, written with the unit, can tell
    -- a return or reconciliation that this segment still holds the sale after a failover
    redis.call('HSET', keys.spilled, orderId, qty)
  end
  local id = redis.call('XADD', keys.outbox, '*',
    'o', orderId, 'p', args.productId, 'u', user, 'q', qty, 's', args.segment, 'h', args.home,
    't', now, 'e', epoch, 'w', payWithin or '0')
  return rated({REPLY.ok, id, remaining}, rate)
end
