/**
 * The draw: each entry's rank is SHA-256(the beacon's randomness bytes || the entry id in UTF-8),
 * ascending. No modulo (nothing is reduced to a range, so no bias) and no ties in practice (a tie
 * is two 256-bit hashes equal; it would fall to the ids' byte order, so the order is still one).
 */
import { hash } from 'node:crypto';

/** The randomness and then an id are written into it: one one-shot hash per entry, no concat. */
let scratch = Buffer.alloc(256);

export const rankHash = (randomness: Buffer, entryId: string): Buffer => {
  const most = randomness.length + entryId.length * 3;
  if (scratch.length < most) scratch = Buffer.alloc(most * 2);
  randomness.copy(scratch, 0);
  const n = scratch.write(entryId, randomness.length, 'utf8');
  return hash('sha256', scratch.subarray(0, randomness.length + n), 'buffer');
};

/**
 * The entries in rank order: the winners first, then the waitlist.
 * @param randomnessHex - the beacon's randomness, hex (32 bytes)
 */
export function drawOrder(entryIds: readonly string[], randomnessHex: string): string[] {
  return Array.from(drawPositions(entryIds, randomnessHex), (i) => entryIds[i]!);
}

/** The positions of `entryIds` in rank order (the first is the index of rank 1). */
export function drawPositions(entryIds: readonly string[], randomnessHex: string): Int32Array {
  const randomness = Buffer.from(randomnessHex, 'hex');
  const n = entryIds.length;
  const hashes = entryIds.map((id) => rankHash(randomness, id));
  // the first 8 bytes as two numbers decide almost every comparison without a Buffer compare
  const hi = new Uint32Array(n);
  const lo = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    hi[i] = hashes[i]!.readUInt32BE(0);
    lo[i] = hashes[i]!.readUInt32BE(4);
  }
  const order = Array.from({ length: n }, (_, i) => i);
  order.sort(
    (a, b) =>
      hi[a]! - hi[b]! ||
      lo[a]! - lo[b]! ||
      Buffer.compare(hashes[a]!, hashes[b]!) ||
      Buffer.compare(Buffer.from(entryIds[a]!), Buffer.from(entryIds[b]!)),
  );
  return Int32Array.from(order);
}

/** Winner ranks of a draw: every winner may buy `limitPerUser`, so ceil(units / limit) win. */
export const winnersOf = (units: number, limitPerUser: number): number =>
  Math.ceil(units / Math.max(1, limitPerUser));

/** Ids in the byte order of their UTF-8 (the frozen list's order), sorted in place. */
export function sortIds(ids: string[]): string[] {
  // ASCII compares the same as UTF-16 code units and as UTF-8 bytes: the plain sort is exact
  if (ids.every((id) => /^[\x00-\x7f]*$/.test(id))) return ids.sort();
  return ids.sort((a, b) => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8')));
}
