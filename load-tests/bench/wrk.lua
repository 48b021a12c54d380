-- wrk script of `npm run bench`: POST <path> with {"productId": <product>}, a distinct X-User-Id
-- per request (<tag>-<n>), statuses counted; done() prints one JSON line with the figures.
--   wrk -t1 -c100 -d5s -s wrk.lua http://host:port -- <path> <productId> <tag>
local threads = {}
function setup(thread) table.insert(threads, thread) end

local counter = 0
function init(args)
  path, product, tag = args[1], args[2], args[3]
  statuses = {}
  body = '{"productId":"' .. product .. '"}'
end

function request()
  counter = counter + 1
  return wrk.format('POST', path,
    { ['content-type'] = 'application/json', ['x-user-id'] = tag .. '-' .. counter }, body)
end

function response(status)
  statuses[status] = (statuses[status] or 0) + 1
end

function done(summary, latency)
  local counts = {}
  for _, t in ipairs(threads) do
    for k, v in pairs(t:get('statuses')) do counts[k] = (counts[k] or 0) + v end
  end
  local parts = {}
  for k, v in pairs(counts) do table.insert(parts, string.format('"%d":%d', k, v)) end
  local e = summary.errors
  io.write(string.format(
    '{"requests":%d,"durationUs":%d,"errors":%d,"p50Us":%d,"p95Us":%d,"p99Us":%d,"statuses":{%s}}\n',
    summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout,
    latency:percentile(50), latency:percentile(95), latency:percentile(99),
    table.concat(parts, ',')))
end
