#!lua flags=allow-oom
--[[
  rateLimit: requests against a GCRA limit (includes/gcra.lua: a leaky bucket kept as one number,
  the theoretical arrival time). `rate` requests per `period`, bursts of `burst`. Every API
  process shares the key, so the limit holds across processes; one key per limit, so it is one
  Redis Cluster slot. Time is Redis server time (one clock for every process).

  One request takes one cell. A process's local allowance (src/access/rate-allowance.ts) leases
  several at once and spends them in process: the bucket gives as many as it holds, up to the
  number asked, so the cells leased by all processes together never pass the limit.

  KEYS[1] the limit's key (a user's or a client address's), holds the TAT in microseconds
  ARGV[1] emission interval: microseconds between requests at the sustained rate (period / rate)
  ARGV[2] burst: requests allowed at once from a full bucket
  ARGV[3] cells wanted (optional, default 1): the bucket gives up to this many, at least one

  Returns
    {allowed, remaining, resetUs, nextUs, taken}  remaining in the bucket, when it is full again,
                                  until one cell more would pass (0 while remaining > 0), and
                                  the cells taken (1 <= taken <= ARGV[3])
    {limited, 0, resetUs, retryUs}           refused (nothing taken): retry in retryUs
]]
local key = KEYS[1]
local interval, burst, want = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3] or 1)
--- @replies
--- @include "gcra"

local t = redis.call('TIME')
local taken, remaining, resetUs, retryUs =
  gcraTake(key, interval, burst, tonumber(t[1]) * 1000000 + tonumber(t[2]), want)
if taken == 0 then return {REPLY.limited, 0, resetUs, retryUs} end
return {REPLY.allowed, remaining, resetUs, retryUs, taken}
