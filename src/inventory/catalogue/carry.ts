/**
 * What a reseed carries into the new epoch: each shopper's purchase count. By default a shopper's
 * purchases count against the limit across a product's epochs (a reseed for the next drop does
 * not hand the limit out again), unless the reseed says it discards them. The old epoch's markers
 * come back from its segments' seeds (lua/seedSegment-4.lua drops and answers them in one step,
 * so no purchase slips between the read and the drop); each shopper's units become a carried
 * marker on their home segment of the new layout (records/marker.ts), written by seeding.ts before
 * the new epoch's segments open.
 */
import { homeSegment } from '../layout.js';
import { decodeMarker, encodeMarker } from '../records/marker.js';

/** Each shopper's units, from the markers the old segments' seeds answered (flat HGETALL replies). */
export function unitsByShopper(dropped: readonly unknown[]): Map<string, number> {
  const units = new Map<string, number>();
  for (const reply of dropped) {
    const flat = reply as string[];
    for (let i = 0; i + 1 < flat.length; i += 2) {
      const marker = decodeMarker(flat[i + 1]);
      if (!marker || marker.units <= 0) continue;
      units.set(flat[i]!, (units.get(flat[i]!) ?? 0) + marker.units);
    }
  }
  return units;
}

export interface CarriedMarker {
  userId: string;
  /** the shopper's home segment in the new epoch's layout */
  segment: number;
  marker: string;
}

/** The carried markers of the new epoch, one per shopper who bought before. */
export function carriedMarkers(
  units: ReadonlyMap<string, number>,
  segments: number,
): CarriedMarker[] {
  return [...units].map(([userId, n]) => ({
    userId,
    segment: homeSegment(userId, segments),
    marker: encodeMarker({ units: n, orderIds: [], carried: n }),
  }));
}
