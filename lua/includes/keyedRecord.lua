-- An Idempotency-Key record written by the keyed home deduct (lua/deductKeyed-10.lua,
-- lua/deductKeyedFree-14.lua) in the same call as the sale: left exactly as lua/idempotencyClaim-3.lua
-- (a running record) and lua/idempotencySettle-3.lua (a finished one) would leave it. The record's
-- value is opaque here: TypeScript encodes it (src/inventory/idempotency-store.ts), so its format
-- stays defined once. The including script defines REPLY with `record` and `full`.

-- What stops the fold before anything changes: the key's record (returned as it is, for the caller
-- to replay, refuse or resolve), or the shopper's index at its cap (the caller claims the usual
-- way, which prunes at the cap or answers full). nil: go on.
local function keyedRecordCheck(recordKey, allKey, cap)
  local existing = redis.call('GET', recordKey)
  if existing then return {REPLY.record, existing} end
  if redis.call('ZCARD', allKey) >= cap then return {REPLY.full} end
  return nil
end

-- The record and its index entry, expiring `ttl` seconds after `now` (server ms).
local function keyedRecordWrite(recordKey, allKey, member, value, ttl, now)
  redis.call('SET', recordKey, value, 'PX', ttl * 1000)
  redis.call('ZADD', allKey, now + ttl * 1000, member)
  redis.call('PEXPIRE', allKey, ttl * 1000)
end

-- After the deduct `r`: a sale writes the finished record, a spill claim the running one (the
-- spill and its settle go on as after a claim); any other reply wrote nothing, and neither does
-- this. A sale's time is its outbox entry's (the stream id's milliseconds: the server's clock,
-- never behind an earlier entry), so no second TIME.
local function keyedRecordAfter(r, recordKey, allKey, member, done, running, ttl)
  if r[1] == REPLY.ok then
    keyedRecordWrite(recordKey, allKey, member, done, ttl, tonumber(string.match(r[2], '^%d+')))
  elseif r[1] == REPLY.spill then
    keyedRecordWrite(recordKey, allKey, member, running, ttl, serverTimeMs())
  end
  return r
end
