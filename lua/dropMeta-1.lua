#!lua flags=allow-oom
--[[
  dropMeta: an operator's change of a product's meta during a drop: paused or not (pause, resume),
  the sale's end (end now), the waiting room's pace. Only while the meta holds the epoch the
  control acted on: a reseed since is left alone, and a product never seeded is never created.

  Flagged allow-oom, as the sale's scripts are: the pause is the emergency brake, and a Redis past
  its maxmemory must not refuse it. What it writes is bounded: it overwrites fields of an existing
  meta (includes/productMeta.lua, metaSetDrop).

  KEYS[1] product meta hash (includes/productMeta.lua)
  ARGV[1] epoch
  ARGV[2] paused: '1' or '0' ('' keeps it)
  ARGV[3] endsAt (ms; '' keeps it)
  ARGV[4] the waiting room's settings as seeding encodes them ('' keeps them)

  Returns {set} or {staleEpoch, the meta's epoch (0: never seeded)}
]]
local metaKey = KEYS[1]
local epoch, paused, endsAt, room = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
--- @replies
--- @include "productMeta"

local metaNow = metaEpoch(metaKey)
if metaNow ~= epoch then return {REPLY.staleEpoch, tonumber(metaNow or 0)} end
local refused = metaSetDrop(metaKey, paused ~= '' and paused or nil, endsAt ~= '' and endsAt or nil,
  room ~= '' and room or nil)
if refused then return refused end
return {REPLY.set}
