#!lua flags=allow-oom
--[[
  idempotencyClaim: claims an Idempotency-Key record for a new request, within the shopper's cap.
  The shopper's records are indexed (all of them, and the final refusals among them, each by its
  expiry); at the cap the oldest final refusals are deleted first (a retry of one runs again and
  is refused again, or buys what came back); records of purchases that sold or are still running
  are never deleted: with only those left, the claim is refused.

  KEYS[1] the record (src/inventory/idempotency/idempotency-store.ts)
  KEYS[2] the shopper's index of records: zset member -> expiry (ms)
  KEYS[3] the shopper's index of final refusals: zset member -> expiry (ms)
  ARGV[1] the record's value
  ARGV[2] its time to live, in seconds
  ARGV[3] the cap: records the shopper may hold
  ARGV[4] the record's member name (its key is ARGV[5] .. member)
  ARGV[5] the key prefix of the shopper's records: they share one hash tag, so every record
          deleted here is in the slot of KEYS

  Returns
    {claimed, evicted}       claimed; evicted = refusal records deleted to make room
    {exists, value}          the key has a record already: nothing changed
    {full, retryAfterMs}     the cap is held by records that must stay: nothing changed
]]
local recordKey, allKey, refusedKey = KEYS[1], KEYS[2], KEYS[3]
local value, ttl, cap = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local member, recordPrefix = ARGV[4], ARGV[5]
--- @replies
--- @include "serverTimeMs"

local existing = redis.call('GET', recordKey)
if existing then return {REPLY.exists, existing} end
local now = serverTimeMs()
local evicted = 0
-- Expired members count until pruned, so the index never holds more than the cap; pruning only
-- once it is reached keeps a claim below the cap at one ZCARD.
if redis.call('ZCARD', allKey) >= cap then
  redis.call('ZREMRANGEBYSCORE', allKey, '-inf', now)
  redis.call('ZREMRANGEBYSCORE', refusedKey, '-inf', now)
  while redis.call('ZCARD', allKey) >= cap do
    local oldest = redis.call('ZPOPMIN', refusedKey)
    if #oldest == 0 then
      local first = redis.call('ZRANGE', allKey, 0, 0, 'WITHSCORES')
      return {REPLY.full, tonumber(first[2]) - now}
    end
    redis.call('DEL', recordPrefix .. oldest[1])
    redis.call('ZREM', allKey, oldest[1])
    evicted = evicted + 1
  end
end
local expiresAt = now + ttl * 1000
redis.call('SET', recordKey, value, 'PX', ttl * 1000)
redis.call('ZADD', allKey, expiresAt, member)
redis.call('PEXPIRE', allKey, ttl * 1000)
return {REPLY.claimed, evicted}
