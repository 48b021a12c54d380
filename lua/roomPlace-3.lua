#!lua flags=no-writes
--[[
  roomPlace: a shopper's place in one read: their ticket, the room's counters, their admission.
  A script, not a MULTI: past maxmemory Redis refuses every command queued in a MULTI, reads
  included, where a script that writes nothing runs (docs/catalogue.md#redis-memory).

  KEYS[1] places hash: userId -> ticket (lua/roomJoin-4.lua)
  KEYS[2] room hash (fields: includes/roomState.lua)
  KEYS[3] admitted hash: userId -> admission time (ms)
  ARGV[1] userId

  Returns {none} when the shopper holds no place, else {placed, ticket, served, opened (0/1), lobby
  length, admission time (ms; 0: not admitted)}.
]]
--- @replies
--- @include "roomState"

local ticket = redis.call('HGET', KEYS[1], ARGV[1])
if not ticket then return {REPLY.none} end
local served, opened, lobbyCount = roomPlaceCounters(KEYS[2])
local at = redis.call('HGET', KEYS[3], ARGV[1])
return {REPLY.placed, tonumber(ticket), served, opened, lobbyCount, tonumber(at or '0')}
