#!lua flags=allow-oom
--[[
  segmentWindow: sets one segment's sale window after its seed: an operator's pause (startsAt set
  to the paused mark, so every deduct answers not started), resume (startsAt back to the sale's)
  and end now (endsAt), and a reseed's opening once the carried purchase counts are written. Only
  while the segment holds the epoch the caller acted on: a reseed since is left alone.

  Flagged allow-oom, as the sale's scripts are: the pause is the emergency brake, and a Redis past
  its maxmemory must not refuse it. What it writes is bounded: two fields of an existing segment
  state overwritten with a time.

  KEYS[1] segment state hash (includes/segmentState.lua)
  ARGV[1] epoch
  ARGV[2] startsAt to set (ms; '' keeps it)
  ARGV[3] endsAt to set (ms; '' keeps it)

  Returns {set} or {staleEpoch, the segment's epoch (0: never seeded)}
]]
local stateKey = KEYS[1]
local epoch, startsAt, endsAt = ARGV[1], ARGV[2], ARGV[3]
--- @replies
--- @include "segmentState"

local segEpoch = stateEpoch(stateKey)
if segEpoch ~= epoch then return {REPLY.staleEpoch, tonumber(segEpoch or 0)} end
stateSetWindow(stateKey, startsAt ~= '' and startsAt or nil, endsAt ~= '' and endsAt or nil)
return {REPLY.set}
