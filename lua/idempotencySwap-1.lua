#!lua flags=allow-oom
--[[
  idempotencySwap: replaces an Idempotency-Key record only if it is still what the caller read
  (compare and set), so of two retries that both found a stale record, exactly one takes it over.

  KEYS[1] the record (src/inventory/idempotency/idempotency-store.ts)
  ARGV[1] the value read
  ARGV[2] the new value (the record keeps the expiry its claim gave it)

  Returns 1 when swapped, 0 when the record changed meanwhile (nothing written).
]]
local recordKey = KEYS[1]
local expected, replacement = ARGV[1], ARGV[2]

if redis.call('GET', recordKey) ~= expected then return 0 end
redis.call('SET', recordKey, replacement, 'KEEPTTL')
return 1
