#!lua flags=allow-oom
--[[
  clearSoldOut: units came back to a sale recorded as sold out (markSoldOut): it is live again,
  and a process that loads the product from now on must not start from "sold out".

  KEYS[1] product meta hash (includes/productMeta.lua)
  ARGV[1] epoch the units came back to

  Returns 1 when the sold-out mark was cleared, 0 when there was none for that epoch.
]]
local metaKey = KEYS[1]
local epoch = ARGV[1]
--- @include "productMeta"

if metaSoldOutEpoch(metaKey) ~= epoch then return 0 end
metaSetSoldOutEpoch(metaKey, 0)
return 1
