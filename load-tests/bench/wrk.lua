-- wrk script of `npm run bench` and `npm run bench:peer`: one POST per request, a distinct shopper
-- each (<tag>-<n>), statuses counted; done() prints one JSON line with the figures.
--   wrk -t1 -c100 -d5s -s wrk.lua http://host:port -- <path> <productId> <tag> [<shape> [<stopAfter>]]
-- shape: seckill  {"productId":<productId>} with X-User-Id: <tag>-<n> (this service; the default)
--        keyed    as seckill, and an Idempotency-Key (<tag>-<n>: one per purchase) as a client
--                 that can retry a lost answer safely sends
--        peer     {"userId":"<tag>-<n>"} (the bench:peer peer: one sale, the shopper in the body)
--        poll     GET <path> with X-User-Id: <tag> (one shopper who joined a waiting room)
--        cors     as seckill, from a shop's page: Origin: https://shop.example
--        preflight  OPTIONS <path> as a browser asks before that purchase (Origin, its method, headers)
-- stopAfter: stop once this many 2xx answers came back (0, the default: run for the duration)
local threads = {}
function setup(thread) table.insert(threads, thread) end

local counter = 0
local ok = 0
function init(args)
  path, product, tag, shape = args[1], args[2], args[3], args[4] or 'seckill'
  stopAfter = tonumber(args[5] or '0')
  statuses = {}
  body = '{"productId":"' .. product .. '"}'
end

function request()
  counter = counter + 1
  local user = tag .. '-' .. counter
  if shape == 'poll' then return wrk.format('GET', path, { ['x-user-id'] = tag }) end
  if shape == 'preflight' then
    return wrk.format('OPTIONS', path, { ['origin'] = 'https://shop.example',
      ['access-control-request-method'] = 'POST',
      ['access-control-request-headers'] = 'content-type, x-user-id' })
  end
  if shape == 'cors' then
    return wrk.format('POST', path, { ['content-type'] = 'application/json', ['x-user-id'] = user,
      ['origin'] = 'https://shop.example' }, body)
  end
  if shape == 'peer' then
    return wrk.format('POST', path, { ['content-type'] = 'application/json' },
      '{"userId":"' .. user .. '"}')
  end
  if shape == 'keyed' then
    return wrk.format('POST', path, { ['content-type'] = 'application/json', ['x-user-id'] = user,
      ['idempotency-key'] = user }, body)
  end
  return wrk.format('POST', path,
    { ['content-type'] = 'application/json', ['x-user-id'] = user }, body)
end

function response(status)
  statuses[status] = (statuses[status] or 0) + 1
  if stopAfter > 0 and status >= 200 and status < 300 then
    ok = ok + 1
    if ok >= stopAfter then wrk.thread:stop() end
  end
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
