-- Redis server time in ms: one clock for every client (scripts replicate effects, so TIME is allowed).
local function serverTimeMs()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- Redis server time in microseconds (a GCRA bucket's unit, includes/gcra.lua).
local function serverTimeUs()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
