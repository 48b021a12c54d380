--[[
  seedSegment: (re)starts one segment for a new sale epoch. The outbox is left alone: orders of
  earlier epochs in it are still to be persisted. The lock's last accepted fencing token is kept,
  so a holder from before the reseed still cannot write.

  KEYS[1] segment state hash (includes/segmentState.lua)
  KEYS[2] buyers hash (dropped: markers belong to the previous epoch)
  KEYS[3] claims hash (dropped likewise)
  KEYS[4] spilled hash (dropped likewise: the previous epoch's returns meet the new epoch first)
  ARGV[1] epoch
  ARGV[2] stock (units)
  ARGV[3] startsAt (ms, 0 = now)
  ARGV[4] endsAt (ms, 0 = open-ended)
  ARGV[5] limit per user (units)
  ARGV[6] payment window (seconds; 0 = every sale is final)
  ARGV[7] '1': answer the buyer markers dropped (the previous epoch's purchase counts, which the
          seed carries into the new epoch: catalogue/carry.ts)

  Returns the dropped markers, userId, marker, ... (empty unless ARGV[7] is '1').
]]
local stateKey, buyersKey, claimsKey, spilledKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local epoch, stock, startsAt, endsAt, limit = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local payWithin, carry = ARGV[6], ARGV[7] == '1'
--- @include "segmentState"

local dropped = carry and redis.call('HGETALL', buyersKey) or {}
redis.call('DEL', buyersKey, claimsKey, spilledKey)
stateSeed(stateKey, epoch, stock, startsAt, endsAt, limit, payWithin)
return dropped
