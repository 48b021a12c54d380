-- A product's meta hash: its sale configuration and epoch. Field names defined here only;
-- TypeScript: META_FIELD of src/inventory/records/hash-fields.ts, decoded by records/product-meta.ts
-- (test/lua-records.test.ts holds them equal). The loader folds the constants (src/redis/scripts.ts).
local META_EPOCH = 'epoch'
local META_TOTAL = 'total'
local META_SEGMENTS = 'segments'
local META_STRATEGY = 'strategy'
local META_STARTS_AT = 'startsAt'
local META_ENDS_AT = 'endsAt'
local META_LIMIT_PER_USER = 'limit'
local META_SOLD_OUT_EPOCH = 'soldOut'
local META_MAX_SEGMENTS = 'maxSegments'
local META_PAY_WITHIN_SECONDS = 'payWithin'
local META_REQUIRE_SALE_TOKEN = 'token'
-- the catalogue number: written by TypeScript (catalogue-numbers.ts), never by a script
local META_NUMBER = 'n'
-- the waiting room's settings, '<admitPerSecond> <maxActive> <admittedForSeconds>': written by
-- TypeScript (seeding.ts) at a seed, by lua/dropMeta-1.lua at a change of pace
local META_WAITING_ROOM = 'room'
-- the sale's price: written by TypeScript (seeding.ts), never by a script
local META_PRICE = 'price'
-- '1' while an operator has paused the sale (lua/dropMeta-1.lua), '0' once resumed or ended, and
-- cleared by a new epoch
local META_PAUSED = 'paused'
-- the draw's window, '<entries open ms> <entries close ms> <buy within s>': written by TypeScript
-- (seeding.ts) at a seed
local META_DRAW = 'draw'
-- the product's own challenge at the door ('off', 'pow [<floor ms>]', 'turnstile', 'hcaptcha'),
-- absent for the deployment's: written by TypeScript (seeding.ts) at a seed
local META_CHALLENGE = 'challenge'

-- what a new epoch decides on, as stored (false when missing):
-- epoch, startsAt, endsAt, soldOut, segments, maxSegments
local function metaForSeed(key)
  local m = redis.call('HMGET', key, META_EPOCH, META_STARTS_AT, META_ENDS_AT, META_SOLD_OUT_EPOCH,
    META_SEGMENTS, META_MAX_SEGMENTS)
  return m[1], m[2], m[3], m[4], m[5], m[6]
end

-- a new epoch with its sale configuration, not sold out: the new epoch
local function metaBegin(key, total, segments, strategy, startsAt, endsAt, limit, payWithin,
                         token, maxSegments)
  local epoch = redis.call('HINCRBY', key, META_EPOCH, 1)
  redis.call('HSET', key, META_TOTAL, total, META_SEGMENTS, segments, META_STRATEGY, strategy,
    META_STARTS_AT, startsAt, META_ENDS_AT, endsAt, META_LIMIT_PER_USER, limit,
    META_SOLD_OUT_EPOCH, 0, META_PAY_WITHIN_SECONDS, payWithin, META_REQUIRE_SALE_TOKEN, token,
    META_MAX_SEGMENTS, maxSegments, META_PAUSED, 0)
  return epoch
end

local function metaEpoch(key)
  return redis.call('HGET', key, META_EPOCH)
end

-- the epoch recorded sold out (0: none; false: never seeded)
local function metaSoldOutEpoch(key)
  return redis.call('HGET', key, META_SOLD_OUT_EPOCH)
end

-- epoch 0 clears the mark
local function metaSetSoldOutEpoch(key, epoch)
  redis.call('HSET', key, META_SOLD_OUT_EPOCH, epoch)
end

-- an operator's change during a drop (lua/dropMeta-1.lua); nil keeps a field. Only fields a seed
-- wrote are overwritten, each with a flag, a time or three integers (checked before any write):
-- what it writes past maxmemory is a few bytes, whatever is sent. An error reply when refused.
local function metaSetDrop(key, paused, endsAt, room)
  if (paused and paused ~= '0' and paused ~= '1') or (endsAt and not string.match(endsAt, '^%d+$'))
      or (room and not (#room <= 32 and string.match(room, '^%d+ %d+ %d+$'))) then
    return redis.error_reply('ERR dropMeta: paused 0 or 1, endsAt ms, room three integers')
  end
  if paused then redis.call('HSET', key, META_PAUSED, paused) end
  if endsAt then redis.call('HSET', key, META_ENDS_AT, endsAt) end
  if room then redis.call('HSET', key, META_WAITING_ROOM, room) end
end
