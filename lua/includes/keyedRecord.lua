-- An Idempotency-Key record written by the keyed home deduct (lua/deductKeyed-10.lua,
-- lua/deductKeyedFree-14.lua) in the same call as the sale: a running record left exactly as
-- lua/idempotencyClaim-3.lua would leave it, a finished one as lua/idempotencySettle-3.lua would,
-- without its index entry (keyedRecordAfter says why). The record's value is opaque here:
-- TypeScript encodes it (src/inventory/records/idempotency-record.ts), so its format stays defined
-- once.
-- The including script defines REPLY with `record` and `full`.

-- What stops the fold before anything changes: the key's record, returned as it is (for the
-- caller to replay, refuse or resolve). With the shopper's bucket asked (`rateKey`), the bucket is
-- read in the same MGET (both live beside the home segment: one slot) and its value returned
-- second, for includes/gcra.lua (false: no bucket). nil: go on.
local function keyedRecordCheck(recordKey, rateKey)
  if rateKey then
    local found = redis.call('MGET', recordKey, rateKey)
    if found[1] then return {REPLY.record, found[1]} end
    return nil, found[2]
  end
  local existing = redis.call('GET', recordKey)
  if existing then return {REPLY.record, existing} end
  return nil
end

-- A spill claim's running record counts against the shopper's cap: at it, the fold writes nothing
-- and answers full (the caller claims the usual way, which prunes at the cap or answers full).
local function keyedCapReached(allKey, cap)
  if redis.call('ZCARD', allKey) >= cap then return {REPLY.full} end
  return nil
end

-- The running record and its index entry, expiring `ttl` seconds after `now` (server ms).
local function keyedRecordWrite(recordKey, allKey, member, value, ttl, now)
  redis.call('SET', recordKey, value, 'PX', ttl * 1000)
  redis.call('ZADD', allKey, now + ttl * 1000, member)
  redis.call('PEXPIRE', allKey, ttl * 1000)
end

-- After the deduct `r`: a sale writes the finished record, a spill claim the running one (the
-- spill and its settle go on as after a claim); any other reply wrote nothing, and neither does
-- this. A sale's record stays out of the shopper's index: the index and its cap bound what a
-- shopper can make Redis keep (refusals, running claims), and a shopper's sales are bounded by
-- the product's per-user limit already; a sale's record is never evicted either way. So a sale
-- costs its record one SET (not SET, ZADD and PEXPIRE, and a ZCARD before the deduct).
local function keyedRecordAfter(r, recordKey, allKey, member, done, running, ttl)
  if r[1] == REPLY.ok then
    redis.call('SET', recordKey, done, 'PX', ttl * 1000)
  elseif r[1] == REPLY.spill then
    keyedRecordWrite(recordKey, allKey, member, running, ttl, serverTimeMs())
  end
  return r
end
