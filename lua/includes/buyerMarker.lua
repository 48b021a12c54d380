-- The buyer marker: a shopper's field of a segment's buyers hash, "<units>:<orderId>,<orderId>,..."
-- (units bought this epoch, the orders that bought them, oldest first). A reseed may start the
-- list with "^<units>": what the shopper bought in the product's earlier epochs, carried in so it
-- counts against this epoch's limit (in <units> too; never an order, never released). Defined here
-- only; its TypeScript codec is src/inventory/records/marker.ts (test/lua-records.test.ts holds
-- them equal).

-- units (0 without a marker) and the orders list (nil without a marker)
local function markerRead(marker)
  if not marker then return 0, nil end
  local units, orders = string.match(marker, '^(%d+):(.*)$')
  return tonumber(units), orders
end

local function markerWrite(units, orders)
  return units .. ':' .. orders
end

-- the orders list with orderId appended (orders may be nil: no marker yet)
local function markerAppend(orders, orderId)
  return (orders and orders ~= '' and (orders .. ',') or '') .. orderId
end

local function markerLast(orders)
  return string.match(orders, '([^,]*)$')
end

local function markerHas(orders, orderId)
  return string.find(',' .. orders .. ',', ',' .. orderId .. ',', 1, true) ~= nil
end
