/**
 * The beacon's checks, with no relay: drand-client verifies a local chain's rounds (the same
 * scheme as quicknet), a published round of drand's RFC 9380 G1 chain (drand-client's own test
 * vector, the "walkthrough" chain) and refuses forged ones; the chain hash is drand's (quicknet's
 * info hashes to quicknet's hash); a local chain answers a round only from its time on.
 */
import { describe, expect, it } from 'vitest';
import { verifyBeacon } from '../../src/draw/beacon.js';
import {
  chainHash,
  chainProblem,
  firstRoundAtOrAfter,
  QUICKNET,
  roundTime,
  type ChainInfo,
} from '../../src/draw/chain.js';
import { LocalChain, newLocalChainKey } from '../../src/draw/local-chain.js';

const walkthrough: ChainInfo = {
  public_key:
    '81d320f220ee9c79e60e19dedc838c31e3ab919b15481e9feb52f643628c4f6a13fdc52129493875a818109d767272ca0541cbcdcea9335f2870d781b39b845ba8cbd44fdfe4967781cf72ca5917fc9398bcf97ca0548ed5a709016c4b1ff0f3',
  period: 3,
  genesis_time: 1687506816,
  hash: 'af8b6fc95693b058a3a59efe586eb31c2c352fe00cf40c62a427d87c34f7a235',
  groupHash: '02d678e93908888871b70e3f015b396a8c082bc1493ae5479f8743cb5d972b54',
  schemeID: 'bls-unchained-g1-rfc9380',
  metadata: { beaconID: 'walkthrough' },
};
const round38 = {
  round: 38,
  randomness: 'b2fc21325a24904a6a9e81a6c63f65f6cec3f0b2400df3f4a56b214770e9ccca',
  signature:
    '95c93585c513ebbcb4777ff15599b3140e5ec0295faa0e483f3deadd88fa6d43f0d3703e3a4ce106e8fd6c6987f32126',
};

describe('the beacon', () => {
  it("hashes a chain's info as drand does", () => {
    expect(chainHash(QUICKNET)).toBe(QUICKNET.hash);
    expect(chainProblem(QUICKNET)).toBeUndefined();
    expect(chainProblem({ ...QUICKNET, public_key: walkthrough.public_key })).toMatch(
      /its hash is/,
    );
  });

  it("verifies a published round of drand's G1 RFC 9380 scheme, and refuses it altered", async () => {
    expect(await verifyBeacon(walkthrough, round38, 38)).toBe(true);
    expect(await verifyBeacon(walkthrough, { ...round38, round: 39 }, 39)).toBe(false);
    expect(await verifyBeacon(walkthrough, round38, 39)).toBe(false);
    const otherRandomness = { ...round38, randomness: '00'.repeat(32) };
    expect(await verifyBeacon(walkthrough, otherRandomness, 38)).toBe(false);
  });

  it("signs a local chain's rounds so that drand-client verifies them, and only under its key", async () => {
    const chain = new LocalChain(newLocalChainKey(3));
    const forger = new LocalChain(newLocalChainKey(3));
    expect(chainProblem(chain.info)).toBeUndefined();
    const beacon = chain.sign(5);
    expect(await verifyBeacon(chain.info, beacon, 5)).toBe(true);
    expect(await verifyBeacon(chain.info, forger.sign(5), 5)).toBe(false);
    expect(await verifyBeacon(chain.info, chain.sign(6), 5)).toBe(false);
    expect(await verifyBeacon(walkthrough, beacon, 5)).toBe(false);
  });

  it('answers a round from its time on, never before', () => {
    const key = { ...newLocalChainKey(3), genesis: 1_000_000 };
    const chain = new LocalChain(key);
    const due = roundTime(chain.info, 10);
    expect(chain.answer(`/${chain.info.hash}/public/10`, due - 1).status).toBe(404);
    expect(chain.answer(`/${chain.info.hash}/public/10`, due).status).toBe(200);
    expect(chain.answer('/public/latest', due).body).toMatchObject({ round: 10 });
    expect(chain.answer(`/${chain.info.hash}/info`, due).body).toEqual(chain.info);
    expect(firstRoundAtOrAfter(chain.info, due)).toBe(10);
    expect(firstRoundAtOrAfter(chain.info, due + 1)).toBe(11);
  });
});
