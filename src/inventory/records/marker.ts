/**
 * A buyer marker: what a shopper has bought in the current sale epoch, kept in the buyers hash of
 * the shopper's home segment (field = user id). Written by lua/deduct-7.lua and
 * lua/claimSettle-2.lua as `<units>:<orderId>,<orderId>,...` (orders oldest first); a reseed that
 * carries purchase counts writes `<units>:^<units>` first (lua/includes/buyerMarker.lua).
 */
export interface BuyerMarker {
  /** every unit that counts against the limit, the carried ones included */
  units: number;
  orderIds: string[];
  /** units bought in the product's earlier epochs, carried in by a reseed (absent: none) */
  carried?: number;
}

/** What starts a carried entry of a marker's list: never an order id. */
const CARRIED = '^';

/** Whether an entry of a marker's list is an order (not a carried count). */
export const isOrderEntry = (entry: string) => entry !== '' && !entry.startsWith(CARRIED);

/** The marker of a buyers-hash field value; null for a missing field. */
export function decodeMarker(raw: string | null | undefined): BuyerMarker | null {
  if (raw === null || raw === undefined) return null;
  const colon = raw.indexOf(':');
  if (colon < 0) throw new Error(`not a buyer marker: ${JSON.stringify(raw)}`);
  const entries = raw.slice(colon + 1).split(',');
  const carried = entries
    .filter((e) => e.startsWith(CARRIED))
    .reduce((sum, e) => sum + Number(e.slice(1)), 0);
  return {
    units: Number(raw.slice(0, colon)),
    orderIds: entries.filter(isOrderEntry),
    ...(carried > 0 && { carried }),
  };
}

export function encodeMarker(marker: BuyerMarker): string {
  const entries = marker.carried
    ? [`${CARRIED}${marker.carried}`, ...marker.orderIds]
    : marker.orderIds;
  return `${marker.units}:${entries.join(',')}`;
}
