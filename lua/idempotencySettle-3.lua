#!lua flags=allow-oom
--[[
  idempotencySettle: writes how a claimed Idempotency-Key's request ended, keeping the record's
  expiry (set by idempotencyClaim) and the shopper's index in step with it.

  KEYS[1] the record
  KEYS[2] the shopper's index of records (see idempotencyClaim)
  KEYS[3] the shopper's index of final refusals
  ARGV[1] store | refused | forget
          store    replace the value (an answer that sold, or an unknown outcome)
          refused  replace the value with a final refusal: evictable at the cap from now on
          forget   delete the record (a transient answer: the retry runs again)
  ARGV[2] the new value (store, refused)
  ARGV[3] the record's member name in the indexes

  Returns 1 when the record was there (and is written or deleted), 0 when it was gone.
]]
local recordKey, allKey, refusedKey = KEYS[1], KEYS[2], KEYS[3]
local mode, value, member = ARGV[1], ARGV[2], ARGV[3]

if mode == 'forget' then
  redis.call('ZREM', allKey, member)
  redis.call('ZREM', refusedKey, member)
  return redis.call('DEL', recordKey)
end
if not redis.call('SET', recordKey, value, 'KEEPTTL', 'XX') then return 0 end
if mode == 'refused' then
  local expiresAt = redis.call('ZSCORE', allKey, member)
  if expiresAt then
    redis.call('ZADD', refusedKey, expiresAt, member)
    redis.call('PEXPIREAT', refusedKey, redis.call('PEXPIRETIME', allKey))
  end
end
return 1
