/**
 * The frozen list's Merkle tree: RFC 6962's Merkle Tree Hash over the sorted entry ids (leaf =
 * SHA-256(0x00 || id), node = SHA-256(0x01 || left || right), the split at the largest power of
 * two below n). Built bottom-up: pairing each level left to right and carrying an odd last node
 * up unchanged is the same tree (test/draw/merkle.test.ts holds the two equal).
 *
 * A proof needs the tree around one leaf, not all of it: the roots of the aligned blocks of
 * CHUNK_LEAVES leaves are kept (32 bytes per block), every block of the tree is a node of it, so
 * a proof is the path inside the leaf's block (its ids read again) then the path over the blocks'
 * roots. RFC 9162 2.1.3.2 verifies it.
 */
import { createHash, hash } from 'node:crypto';

/** Leaves per kept block: a power of two (256 ids read to prove one, 32 bytes kept per 256). */
export const CHUNK_LEAVES = 256;

/** One buffer the prefix and the input are written into: one-shot `hash` is several times faster
 * than a createHash per input for inputs this short (10^6 leaves and as many nodes a freeze). */
let scratch = Buffer.alloc(256);

/** SHA-256(prefix || the `length` bytes written after it in the scratch buffer). */
const prefixed = (prefix: number, length: number): Buffer => {
  scratch[0] = prefix;
  return hash('sha256', scratch.subarray(0, 1 + length), 'buffer');
};

export const leafHash = (id: string): Buffer => {
  const most = 1 + id.length * 3;
  if (scratch.length < most) scratch = Buffer.alloc(most * 2);
  return prefixed(0, scratch.write(id, 1, 'utf8'));
};

export const nodeHash = (left: Buffer, right: Buffer): Buffer => {
  left.copy(scratch, 1);
  right.copy(scratch, 1 + left.length);
  return prefixed(1, left.length + right.length);
};

/** The hash of an empty list (RFC 6962: the hash of the empty string). */
export const EMPTY_ROOT = createHash('sha256').digest();

/** One level up: pairs hashed left to right, an odd last one carried as it is. */
function levelUp(level: readonly Buffer[]): Buffer[] {
  const up: Buffer[] = [];
  for (let i = 0; i + 1 < level.length; i += 2) up.push(nodeHash(level[i]!, level[i + 1]!));
  if (level.length % 2 === 1) up.push(level[level.length - 1]!);
  return up;
}

/** The root over nodes of one level (leaf hashes, or the blocks' roots). */
export function rootOf(level: readonly Buffer[]): Buffer {
  if (level.length === 0) return EMPTY_ROOT;
  let nodes = level as Buffer[];
  while (nodes.length > 1) nodes = levelUp(nodes);
  return nodes[0]!;
}

/** The audit path of `index` over nodes of one level, from that level up to the root. */
export function pathOf(level: readonly Buffer[], index: number): Buffer[] {
  const path: Buffer[] = [];
  let nodes = level as Buffer[];
  let at = index;
  while (nodes.length > 1) {
    const sibling = at ^ 1;
    if (sibling < nodes.length) path.push(nodes[sibling]!);
    nodes = levelUp(nodes);
    at >>= 1;
  }
  return path;
}

/** The roots of the aligned blocks of CHUNK_LEAVES leaves of the sorted ids (the last short). */
export function chunkRoots(sortedIds: readonly string[]): Buffer[] {
  const roots: Buffer[] = [];
  for (let from = 0; from < sortedIds.length; from += CHUNK_LEAVES) {
    roots.push(rootOf(sortedIds.slice(from, from + CHUNK_LEAVES).map(leafHash)));
  }
  return roots;
}

/** The tree's root from its blocks' roots. */
export const rootOfChunks = (roots: readonly Buffer[]): Buffer => rootOf(roots);

/**
 * The audit path of the leaf at `position`, from the ids of its block and every block's root.
 * @param chunkIds - the sorted ids of block `position / CHUNK_LEAVES`
 */
export function proofOf(
  position: number,
  chunkIds: readonly string[],
  roots: readonly Buffer[],
): Buffer[] {
  const chunk = Math.floor(position / CHUNK_LEAVES);
  const inner = pathOf(chunkIds.map(leafHash), position % CHUNK_LEAVES);
  return [...inner, ...pathOf(roots, chunk)];
}

/** RFC 9162 2.1.3.2: does `path` prove the leaf at `index` in a tree of `size` under `root`? */
export function verifyInclusion(
  leaf: Buffer,
  index: number,
  size: number,
  path: readonly Buffer[],
  root: Buffer,
): boolean {
  if (index >= size) return false;
  let fn = index;
  let sn = size - 1;
  let r = leaf;
  for (const p of path) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      r = nodeHash(p, r);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else r = nodeHash(r, p);
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && r.equals(root);
}
