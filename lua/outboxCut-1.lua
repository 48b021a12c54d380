--[[
  outboxCut: the newest id ever added to a segment's outbox (XINFO's last-generated-id, which XDEL
  does not lower): where reconciliation cuts. A script so that a Redis Cluster client routes it by
  its key: in XINFO STREAM <key> the client takes the subcommand for the key.

  KEYS[1] outbox stream

  Returns the id; "0-0" for a stream never written.
]]
local outboxKey = KEYS[1]

if redis.call('EXISTS', outboxKey) == 0 then return '0-0' end
local info = redis.call('XINFO', 'STREAM', outboxKey)
for i = 1, #info, 2 do
  if info[i] == 'last-generated-id' then return info[i + 1] end
end
return '0-0'
