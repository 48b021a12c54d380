/**
 * A segment's state hash: its epoch, stock and units sold, the sale window and limit copied from
 * the product, and the newest fencing token the deduct accepted. Written by lua/seedSegment-4.lua,
 * lua/deduct-7.lua and lua/restock-3.lua through lua/includes/segmentState.lua. Field names:
 * hash-fields.ts.
 */
import { STATE_FIELD } from './hash-fields.js';

/**
 * A paused sale's segments start here (year 255 000): every deduct answers "not started" with it,
 * which the sale reads as paused (sale/refusals.ts). The sale's own start is in the meta.
 */
export const PAUSED_STARTS_AT = 8_000_000_000_000_000;

export interface SegmentState {
  epoch: number;
  stock: number;
  /** units sold here, returned ones included */
  sold: number;
  /** units of cancelled, expired and refunded orders put back on sale here (lua/restock-3.lua) */
  returned: number;
  /** newest lock fencing token a deduct accepted here (0 = none yet) */
  fence: number;
  /** net units an operator put on sale (+) or took off it (-) here this epoch */
  added: number;
}

/** The fields read by {@link decodeSegmentState}, in HMGET order. */
export const SEGMENT_STATE_FIELDS = [
  STATE_FIELD.epoch,
  STATE_FIELD.stock,
  STATE_FIELD.sold,
  STATE_FIELD.fence,
  STATE_FIELD.returned,
  STATE_FIELD.added,
] as const;

/** The state of an HMGET of {@link SEGMENT_STATE_FIELDS}; null for a segment never seeded. */
export function decodeSegmentState(values: ReadonlyArray<string | null>): SegmentState | null {
  const [epoch, stock, sold, fence, returned, added] = values;
  if (epoch === null || epoch === undefined) return null;
  return {
    epoch: Number(epoch),
    stock: Number(stock ?? 0),
    sold: Number(sold ?? 0),
    returned: Number(returned ?? 0),
    fence: Number(fence ?? 0),
    added: Number(added ?? 0),
  };
}
