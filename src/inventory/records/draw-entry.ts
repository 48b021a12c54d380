/**
 * A shopper's entry in a draw, as the entries hash holds it: `<entryId> <address block> <seq>`
 * (the block `-` when unknown). Written by lua/includes/drawState.lua's drawEntryRecord; read here
 * by the freeze, which scans every entry at the close. The draw hash's fields: DRAW_FIELD.
 */
import { DRAW_FIELD } from './hash-fields.js';

export { DRAW_FIELD };

export interface DrawEntryRecord {
  entryId: string;
  /** the client address block it came from ('' when unknown) */
  block: string;
  /** its number in the order entries came (1 first) */
  seq: number;
}

export function decodeDrawEntry(record: string): DrawEntryRecord | null {
  const [entryId, block, seq] = record.split(' ');
  if (!entryId || block === undefined || !Number.isInteger(Number(seq))) return null;
  return { entryId, block: block === '-' ? '' : block, seq: Number(seq) };
}

/** The draw's counters, as HMGET of {@link DRAW_COUNTER_FIELDS} answers them. */
export interface DrawCounters {
  /** entries held now */
  count: number;
  /** Redis ms of the close by the admitter (0: not closed) */
  closedAt: number;
}

export const DRAW_COUNTER_FIELDS = [DRAW_FIELD.count, DRAW_FIELD.closedAt];

export const decodeDrawCounters = (values: ReadonlyArray<string | null>): DrawCounters => ({
  count: Number(values[0] ?? 0),
  closedAt: Number(values[1] ?? 0),
});
