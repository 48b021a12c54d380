#!lua flags=allow-oom
--[[
  markSoldOut: records that every segment of the current epoch is empty (a process that loads the
  product later starts from "sold out" without asking the segments).

  KEYS[1] product meta hash (includes/productMeta.lua)
  ARGV[1] epoch whose segments were all seen empty

  Returns 1 when recorded, 0 when the product has moved on to another epoch.
]]
local metaKey = KEYS[1]
local epoch = ARGV[1]
--- @include "productMeta"

if metaEpoch(metaKey) ~= epoch then return 0 end
metaSetSoldOutEpoch(metaKey, epoch)
return 1
