/**
 * The standalone verifier (examples/verify-draw.mjs) against the service's own pieces: its plain
 * JavaScript SHA-256, its Merkle root (split over two threads past 50,000 entries) and its rank
 * order (first words sorted as numbers) equal src/draw's, and a transcript of 60,000 entries, on
 * the two-thread path, verifies while one swapped rank or a listed id changed does not.
 */
import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { roundTime } from '../../src/draw/chain.js';
import { LocalChain, newLocalChainKey } from '../../src/draw/local-chain.js';
import { chunkRoots, rootOfChunks } from '../../src/draw/merkle.js';
import { drawOrder, drawPositions, sortIds } from '../../src/draw/ranks.js';
// @ts-expect-error: a plain .mjs file, its types are the test's business
import * as verifier from '../../examples/verify-draw.mjs';

const v = verifier as {
  merkleRoot(ids: string[]): string;
  rankPositions(ids: string[], randomnessHex: string): Int32Array;
  sha256Words(bytes: Uint8Array, len: number, out: Int32Array, at: number): void;
  verifyTranscript(t: unknown, o: { chain?: string }): Promise<{ problems: string[] }>;
};

const ids = (n: number) => Array.from({ length: n }, () => randomBytes(12).toString('base64url'));

describe('the standalone verifier', () => {
  it('hashes, roots and ranks as the service does', () => {
    for (const len of [0, 1, 55, 56, 63, 64, 65, 200]) {
      const bytes = randomBytes(len);
      const out = new Int32Array(8);
      v.sha256Words(bytes, len, out, 0);
      const hex = Array.from(out, (w) => (w >>> 0).toString(16).padStart(8, '0')).join('');
      expect(hex, `${len} bytes`).toBe(createHash('sha256').update(bytes).digest('hex'));
    }
    const list = sortIds(ids(3_001));
    expect(v.merkleRoot(list)).toBe(rootOfChunks(chunkRoots(list)).toString('hex'));
    const randomness = randomBytes(32).toString('hex');
    expect(Array.from(v.rankPositions(list, randomness))).toEqual(
      Array.from(drawPositions(list, randomness)),
    );
  });

  it('verifies a draw of 60,000 entries on two threads, and finds one rank swapped', async () => {
    const chain = new LocalChain(newLocalChainKey(7), 'verifier-test');
    const list = sortIds(ids(60_000));
    const round = chain.latestAt(Date.now());
    const beacon = chain.sign(round);
    const order = drawOrder(list, beacon.randomness);
    const t = {
      productId: 'p',
      epoch: 1,
      state: 'drawn',
      entries: list.length,
      root: rootOfChunks(chunkRoots(list)).toString('hex'),
      chain: chain.info,
      round,
      roundAt: new Date(roundTime(chain.info, round)).toISOString(),
      beacon,
      frozenAt: new Date(roundTime(chain.info, round) - 1_000).toISOString(),
      units: 10,
      limitPerUser: 1,
      winners: order.slice(0, 10),
      waitlist: order.slice(10),
      offered: 10,
      bought: [],
    };
    const named = { chain: chain.info.hash };
    expect((await v.verifyTranscript(t, named)).problems).toEqual([]);
    const swapped = [...t.waitlist];
    [swapped[500], swapped[501]] = [swapped[501]!, swapped[500]!];
    expect((await v.verifyTranscript({ ...t, waitlist: swapped }, named)).problems).toEqual([
      `rank 511 is ${order[510]}, the transcript lists ${order[511]}`,
    ]);
    const changed = [...t.waitlist.slice(0, -1), 'x'.repeat(16)];
    expect(
      (await v.verifyTranscript({ ...t, waitlist: changed }, named)).problems.join('\n'),
    ).toMatch(/Merkle root/);
  });
});
