/**
 * A local beacon chain of quicknet's scheme (bls-unchained-g1-rfc9380), for machines without the
 * internet and for the tests: its own BLS12-381 key, signing round r as drand does (the message
 * SHA-256(r as 8 bytes big-endian), the signature on G1 hashed with RFC 9380's DST for G1, the
 * randomness SHA-256(signature)), served over HTTP in drand's API shape (`/<hash>/info`,
 * `/<hash>/public/<round>`, `/<hash>/public/latest`, and the same without the hash), so the code
 * that fetches and verifies quicknet fetches and verifies it. A round is answered from its time
 * on, never before: nobody, its operator's processes included, reads a round ahead over HTTP.
 * Whoever holds the key can sign any round early: a draw on a local chain is as fair as the
 * key's holder (docs/draw.md says so, and a transcript names its chain).
 */
import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { bls12_381 as bls } from '@noble/curves/bls12-381';
import type { Beacon } from './beacon.js';
import { chainHash, DRAW_SCHEME, roundTime, type ChainInfo } from './chain.js';

/** A local chain's key and clock: what `LocalChain` is made from (kept in a file by `up`). */
export interface LocalChainKey {
  /** the BLS secret key, 32 bytes hex */
  secret: string;
  /** unix seconds of round 1 */
  genesis: number;
  /** seconds between rounds */
  period: number;
}

export const newLocalChainKey = (period = 3): LocalChainKey => ({
  secret: Buffer.from(bls.utils.randomSecretKey()).toString('hex'),
  genesis: Math.floor(Date.now() / 1_000),
  period,
});

export class LocalChain {
  readonly info: ChainInfo;
  private readonly secret: Uint8Array;
  private readonly signed = new Map<number, Beacon>();

  constructor(key: LocalChainKey, beaconID = 'seckill-local') {
    this.secret = Buffer.from(key.secret, 'hex');
    const publicKey = bls.shortSignatures.getPublicKey(this.secret).toHex(true);
    const base = {
      public_key: publicKey,
      period: key.period,
      genesis_time: key.genesis,
      // drand's group hash names the group file: here, the key alone
      groupHash: createHash('sha256').update(publicKey, 'hex').digest('hex'),
      schemeID: DRAW_SCHEME,
      metadata: { beaconID },
    };
    this.info = { ...base, hash: chainHash(base) };
  }

  /** Round `round`'s beacon, whatever the time (the HTTP server waits for it). */
  sign(round: number): Beacon {
    const had = this.signed.get(round);
    if (had) return had;
    const be = Buffer.alloc(8);
    be.writeBigUInt64BE(BigInt(round));
    const message = createHash('sha256').update(be).digest();
    const point = bls.shortSignatures.sign(bls.shortSignatures.hash(message), this.secret);
    const signature = point.toHex(true);
    const randomness = createHash('sha256').update(Buffer.from(signature, 'hex')).digest('hex');
    const beacon = { round, randomness, signature };
    this.signed.set(round, beacon);
    return beacon;
  }

  /** The latest round due at `nowMs` (0 before the genesis). */
  latestAt(nowMs: number): number {
    const since = nowMs - this.info.genesis_time * 1_000;
    return since < 0 ? 0 : Math.floor(since / (this.info.period * 1_000)) + 1;
  }

  /** Serves the chain on `port` (0: any) of `host`; resolves to its base URL. */
  async serve(port = 0, host = '127.0.0.1'): Promise<{ url: string; server: Server }> {
    const server = createServer((req, res) => {
      const answer = this.answer(new URL(req.url ?? '/', 'http://x').pathname, Date.now());
      res.writeHead(answer.status, {
        'content-type': 'application/json',
        'cache-control': 'no-store',
      });
      res.end(JSON.stringify(answer.body));
    });
    await new Promise<void>((resolve) => server.listen(port, host, resolve));
    const { port: bound } = server.address() as AddressInfo;
    return { url: `http://${host}:${bound}`, server };
  }

  /** The answer to a GET of `path` at `nowMs` (drand's relay API). */
  answer(path: string, nowMs: number): { status: number; body: unknown } {
    const parts = path.split('/').filter(Boolean);
    if (parts[0] === this.info.hash) parts.shift();
    if (parts.length === 1 && parts[0] === 'info') return { status: 200, body: this.info };
    if (parts.length === 1 && parts[0] === 'chains') return { status: 200, body: [this.info.hash] };
    if (parts.length !== 2 || parts[0] !== 'public') return notFound('no such path');
    const latest = this.latestAt(nowMs);
    const round = parts[1] === 'latest' ? latest : Number(parts[1]);
    if (!Number.isSafeInteger(round) || round < 1) return notFound('no such round');
    if (round > latest) {
      return notFound(
        `round ${round} is due at ${new Date(roundTime(this.info, round)).toISOString()}`,
      );
    }
    return { status: 200, body: this.sign(round) };
  }
}

const notFound = (message: string) => ({ status: 404, body: { error: message } });
