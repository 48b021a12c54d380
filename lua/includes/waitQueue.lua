-- The waiters of a lock, in both modes. queueKey: zset owner -> arrival (server time, us), so
-- the oldest is first; deadlinesKey: zset owner -> deadline (ms) of that owner's place. A waiter
-- keeps its place by retrying before its deadline; a crashed waiter's place lapses, so it cannot
-- hold up the line. Every operation is O(log n): a line of thousands stays cheap.

-- Drops waiters at the head whose place lapsed; returns the live head (or nil).
local function liveHead(queueKey, deadlinesKey, now)
  while true do
    local head = redis.call('ZRANGE', queueKey, 0, 0)[1]
    if not head then return nil end
    local deadline = tonumber(redis.call('ZSCORE', deadlinesKey, head))
    if deadline and deadline > now then return head end
    redis.call('ZREM', queueKey, head)
    redis.call('ZREM', deadlinesKey, head)
  end
end

-- Joins the line at the back, or keeps an existing place, until `deadline`.
local function keepPlace(queueKey, deadlinesKey, owner, deadline)
  local t = redis.call('TIME')
  redis.call('ZADD', queueKey, 'NX', tonumber(t[1]) * 1000000 + tonumber(t[2]), owner)
  redis.call('ZADD', deadlinesKey, deadline, owner)
end

-- Leaves the line (a no-op for an owner that is not in it).
local function leaveLine(queueKey, deadlinesKey, owner)
  redis.call('ZREM', queueKey, owner)
  return redis.call('ZREM', deadlinesKey, owner) == 1
end

-- Wakes the oldest live waiter. Each process listens on its own channel per lock,
-- "<channel prefix><process id>" (same hash tag, same slot), so the notice (the owner id) reaches
-- only the waiter's process. A waiter in the releasing process is woken by it directly instead.
-- Owner ids are "<process id>:<context id>". Returns the owner woken (or false when nobody waits).
local function wakeNext(channelPrefix, releaser, queueKey, deadlinesKey, now)
  local head = liveHead(queueKey, deadlinesKey, now)
  if not head then return false end
  local process = string.match(head, '^(.*):[^:]*$') or head
  if process ~= releaser then
    redis.call('SPUBLISH', channelPrefix .. process, head)
  end
  return head
end
