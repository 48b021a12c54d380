/**
 * Hash tags that spread a product's segments evenly over a Redis Cluster's slots. The plain tag
 * `{P:i}` hashes segment i to a pseudo-random slot: over 3 masters, 16 segments put 7.1 on the
 * busiest master on average (10 at worst) where 5.3 would be even, and the busiest master
 * bounds a hot sale. Instead segment i aims at a point of the van der Corput sequence (0, 1/2,
 * 1/4, 3/4, 1/8, ...) of the slot space: the first N points of it are evenly spaced for every
 * N, so a product's segments spread evenly whatever its segment count (and a reseed with
 * another count keeps every segment's key). The tag is `P:i` when that already hashes into the
 * segment's window, else `P:i/k` for the first k that does ('/' is not allowed in ids, so no
 * tag of one product can be another's).
 */
import calculateSlot from 'cluster-key-slot';

const SLOTS = 16_384;
/** Width of each segment's target window: 1/64 of the slot space (64 tries on average). */
const WINDOW = SLOTS / 64;

/** The i-th point of the base-2 van der Corput sequence, in [0, 1). */
function vanDerCorput(index: number): number {
  let x = 0;
  let f = 0.5;
  for (let n = index; n > 0; n >>= 1, f /= 2) if (n & 1) x += f;
  return x;
}

const memo = new Map<string, string>();
const MEMO_MAX = 100_000;

/** The hash-tag content of segment `i` of `productId` (checked id; i >= 0). */
export function spreadTag(productId: string, segment: number): string {
  const plain = `${productId}:${segment}`;
  const hit = memo.get(plain);
  if (hit) return hit;
  const from = Math.floor(vanDerCorput(segment) * SLOTS);
  const inWindow = (slot: number) => (slot - from + SLOTS) % SLOTS < WINDOW;
  let tag = plain;
  for (let k = 1; !inWindow(calculateSlot(tag)); k++) tag = `${plain}/${k}`;
  if (memo.size >= MEMO_MAX) memo.clear();
  memo.set(plain, tag);
  return tag;
}
