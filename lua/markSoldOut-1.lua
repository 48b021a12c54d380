--[[
  markSoldOut: records that every segment of the current epoch is empty (a process that loads the
  product later starts from "sold out" without asking the segments).

  KEYS[1] product meta hash
  ARGV[1] epoch whose segments were all seen empty

  Returns 1 when recorded, 0 when the product has moved on to another epoch.
]]
if redis.call('HGET', KEYS[1], 'epoch') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'soldOut', ARGV[1])
return 1
