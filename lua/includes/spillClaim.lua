-- The spill claim: a shopper's field of the home segment's claims hash while a purchase takes its
-- units from another segment, "<orderId>|<quantity>|<server ms>". Defined here only; its
-- TypeScript codec is src/inventory/records/claim.ts (test/lua-records.test.ts holds them equal).

local function claimWrite(orderId, qty, at)
  return orderId .. '|' .. qty .. '|' .. at
end

-- the claim's order id and quantity
local function claimRead(claim)
  local orderId, qty = string.match(claim, '^([^|]*)|(%d+)|')
  return orderId, tonumber(qty)
end
