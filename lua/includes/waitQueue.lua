-- The waiters of a lock, in both modes: lineKey is a zset owner -> arrival (server time, us), so
-- the oldest is first. A release takes the oldest waiter out of the line and keeps the free lock
-- for it a short while (handoffKey); a waiter whose process died is thus dropped the first time
-- its turn comes, after holding the lock up for one reservation at most.

-- Joins the line at the back (a no-op for an owner already in it).
local function joinLine(lineKey, owner)
  local t = redis.call('TIME')
  redis.call('ZADD', lineKey, 'NX', tonumber(t[1]) * 1000000 + tonumber(t[2]), owner)
end

-- Wakes the oldest waiter of a lock that just became free: takes it out of the line and reserves
-- the lock for it (handoffKey = its owner id, for handoffMs), so neither the releaser nor a
-- newcomer can barge in before it comes (no starvation). Each process listens on its own channel
-- per lock, "<channel prefix><process id>" (same hash tag, same slot), so the notice (the owner
-- id) reaches only the waiter's process; a waiter in the `releaser` process is woken by it
-- directly. Owner ids are "<process id>:<context id>".
-- Returns the owner woken, or false when nobody waits.
local function wakeNext(channelPrefix, releaser, lineKey, handoffKey, handoffMs)
  local head = redis.call('ZPOPMIN', lineKey)[1]
  if not head then return false end
  redis.call('SET', handoffKey, head, 'PX', handoffMs)
  local process = string.match(head, '^(.*):[^:]*$') or head
  if process ~= releaser then
    redis.call('SPUBLISH', channelPrefix .. process, head)
  end
  return head
end
