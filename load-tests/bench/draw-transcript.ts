/**
 * A drawn transcript of `n` entries made in this process from the service's own pieces (the
 * Merkle tree, the ranks, a local chain's round), without Redis or PostgreSQL: the verifier's row
 * at 10^6 entries then costs the verifier's time only, not the minutes the store takes to be
 * filled with 10^6 entries on a loaded machine.
 */
import { randomBytes } from 'node:crypto';
import { chunkRoots, rootOfChunks } from '../../src/draw/merkle.js';
import { drawOrder, sortIds, winnersOf } from '../../src/draw/ranks.js';
import type { LocalChain } from '../../src/draw/local-chain.js';
import { roundTime } from '../../src/draw/chain.js';

export function madeTranscript(chain: LocalChain, n: number, units: number) {
  const ids = sortIds(Array.from({ length: n }, () => randomBytes(12).toString('base64url')));
  const round = chain.latestAt(Date.now());
  const beacon = chain.sign(round);
  const order = drawOrder(ids, beacon.randomness);
  const winners = winnersOf(units, 1);
  const iso = (ms: number) => new Date(ms).toISOString();
  return {
    productId: 'made',
    epoch: 1,
    state: 'drawn',
    entries: n,
    root: rootOfChunks(chunkRoots(ids)).toString('hex'),
    rulesHash: '0'.repeat(64),
    removed: 0,
    chain: chain.info,
    round,
    roundAt: iso(roundTime(chain.info, round)),
    beacon,
    frozenAt: iso(roundTime(chain.info, round) - 1_000),
    drawnAt: iso(Date.now()),
    units,
    limitPerUser: 1,
    winners: order.slice(0, winners),
    waitlist: order.slice(winners),
    offered: winners,
    bought: [],
  };
}
