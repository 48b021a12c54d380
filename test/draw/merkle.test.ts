/**
 * The frozen list's Merkle tree against RFC 6962's recursive definition, written out here from
 * the RFC (not from src/): roots and audit paths for every size 0..70, both built bottom-up and
 * from the kept blocks' roots, each path verified by RFC 9162's algorithm, and a wrong leaf, index
 * or root refused.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  chunkRoots,
  CHUNK_LEAVES,
  leafHash,
  pathOf,
  proofOf,
  rootOf,
  rootOfChunks,
  verifyInclusion,
} from '../../src/draw/merkle.js';

const sha = (...parts: Buffer[]) => createHash('sha256').update(Buffer.concat(parts)).digest();

/** RFC 6962 2.1: MTH(D[n]). */
function mth(ids: string[]): Buffer {
  if (ids.length === 0) return sha();
  if (ids.length === 1) return sha(Buffer.from([0]), Buffer.from(ids[0]!, 'utf8'));
  let k = 1;
  while (k * 2 < ids.length) k *= 2;
  return sha(Buffer.from([1]), mth(ids.slice(0, k)), mth(ids.slice(k)));
}

/** RFC 6962 2.1.1: PATH(m, D[n]). */
function path(m: number, ids: string[]): Buffer[] {
  if (ids.length <= 1) return [];
  let k = 1;
  while (k * 2 < ids.length) k *= 2;
  return m < k
    ? [...path(m, ids.slice(0, k)), mth(ids.slice(k))]
    : [...path(m - k, ids.slice(k)), mth(ids.slice(0, k))];
}

const idsOf = (n: number) => Array.from({ length: n }, (_, i) => `e${String(i).padStart(4, '0')}`);

describe('the Merkle tree', () => {
  it('has RFC 6962 roots and audit paths for every size 0..70', () => {
    for (let n = 0; n <= 70; n++) {
      const ids = idsOf(n);
      const leaves = ids.map(leafHash);
      expect(rootOf(leaves).toString('hex'), `n=${n}`).toBe(mth(ids).toString('hex'));
      for (let m = 0; m < n; m++) {
        const mine = pathOf(leaves, m).map((b) => b.toString('hex'));
        expect(mine, `n=${n} m=${m}`).toEqual(path(m, ids).map((b) => b.toString('hex')));
        expect(verifyInclusion(leaves[m]!, m, n, pathOf(leaves, m), mth(ids))).toBe(true);
      }
    }
  });

  it('builds the same root and proofs from the kept blocks, across block edges', () => {
    for (const n of [1, CHUNK_LEAVES - 1, CHUNK_LEAVES, CHUNK_LEAVES + 1, 3 * CHUNK_LEAVES + 7]) {
      const ids = idsOf(n);
      const roots = chunkRoots(ids);
      expect(roots).toHaveLength(Math.ceil(n / CHUNK_LEAVES));
      const root = rootOfChunks(roots);
      expect(root.toString('hex'), `n=${n}`).toBe(mth(ids).toString('hex'));
      for (const m of [0, n - 1, Math.floor(n / 2), Math.min(n - 1, CHUNK_LEAVES)]) {
        const chunk = Math.floor(m / CHUNK_LEAVES) * CHUNK_LEAVES;
        const proof = proofOf(m, ids.slice(chunk, chunk + CHUNK_LEAVES), roots);
        expect(proof.map((b) => b.toString('hex'))).toEqual(
          path(m, ids).map((b) => b.toString('hex')),
        );
        expect(verifyInclusion(leafHash(ids[m]!), m, n, proof, root)).toBe(true);
      }
    }
  });

  it('refuses a proof of another leaf, index, size or root', () => {
    const ids = idsOf(37);
    const leaves = ids.map(leafHash);
    const root = rootOf(leaves);
    const proof = pathOf(leaves, 9);
    expect(verifyInclusion(leaves[9]!, 9, 37, proof, root)).toBe(true);
    expect(verifyInclusion(leafHash('e9999'), 9, 37, proof, root)).toBe(false);
    expect(verifyInclusion(leaves[9]!, 10, 37, proof, root)).toBe(false);
    expect(verifyInclusion(leaves[9]!, 9, 65, proof, root)).toBe(false);
    expect(verifyInclusion(leaves[9]!, 9, 37, proof, leaves[0]!)).toBe(false);
    expect(verifyInclusion(leaves[9]!, 37, 37, proof, root)).toBe(false);
  });
});
