/**
 * A buyer marker: what a shopper has bought in the current sale epoch, kept in the buyers hash of
 * the shopper's home segment (field = user id). Written by lua/deduct-7.lua and
 * lua/claimSettle-2.lua as `<units>:<orderId>,<orderId>,...` (orders oldest first).
 */
export interface BuyerMarker {
  units: number;
  orderIds: string[];
}

/** The marker of a buyers-hash field value; null for a missing field. */
export function decodeMarker(raw: string | null | undefined): BuyerMarker | null {
  if (raw === null || raw === undefined) return null;
  const colon = raw.indexOf(':');
  if (colon < 0) throw new Error(`not a buyer marker: ${JSON.stringify(raw)}`);
  const list = raw.slice(colon + 1);
  return { units: Number(raw.slice(0, colon)), orderIds: list ? list.split(',') : [] };
}

export function encodeMarker(marker: BuyerMarker): string {
  return `${marker.units}:${marker.orderIds.join(',')}`;
}
