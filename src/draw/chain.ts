/**
 * A drand chain as its `/info` describes it: the public key every round's signature is checked
 * against, the period and genesis that give each round its time, the scheme. Its hash is drand's:
 * SHA-256(period as uint32 BE || genesis as int64 BE || public key || group hash || beacon id
 * unless "default"), so a chain info that claims a hash it does not hash to is refused, and a
 * transcript that names quicknet's hash is checked against quicknet's key whatever key it carries.
 */
import { createHash } from 'node:crypto';

/** drand's `/info` answer (the fields this service reads and passes to drand-client). */
export interface ChainInfo {
  public_key: string;
  period: number;
  genesis_time: number;
  hash: string;
  groupHash: string;
  schemeID: string;
  metadata: { beaconID: string };
}

/** The only scheme a draw takes: unchained, signatures on G1, RFC 9380 hashing (quicknet's). */
export const DRAW_SCHEME = 'bls-unchained-g1-rfc9380';

/** drand's quicknet on the League of Entropy mainnet (its relays' `/info`). */
export const QUICKNET: ChainInfo = Object.freeze({
  public_key:
    '83cf0f2896adee7eb8b5f01fcad3912212c437e0073e911fb90022d3e760183c8c4b450b6a0a6c3ac6a5776a2d1064510d1fec758c921cc22b0e17e63aaf4bcb5ed66304de9cf809bd274ca73bab4af5a6e9c76a4bc09e76eae8991ef5ece45a',
  period: 3,
  genesis_time: 1692803367,
  hash: '52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971',
  groupHash: 'f477d5c89f21a17c863a7f937c6a6d15859414d2be09cd448d4279af331c5d3e',
  schemeID: DRAW_SCHEME,
  metadata: Object.freeze({ beaconID: 'quicknet' }),
}) as ChainInfo;

/** drand's HTTP relays of quicknet. */
export const QUICKNET_RELAYS = [
  'https://api.drand.sh',
  'https://api2.drand.sh',
  'https://api3.drand.sh',
  'https://drand.cloudflare.com',
];

/** The chain's hash as drand computes it from its info. */
export function chainHash(info: Omit<ChainInfo, 'hash'>): string {
  const head = Buffer.alloc(12);
  head.writeUInt32BE(info.period, 0);
  head.writeBigInt64BE(BigInt(info.genesis_time), 4);
  const h = createHash('sha256')
    .update(head)
    .update(Buffer.from(info.public_key, 'hex'))
    .update(Buffer.from(info.groupHash, 'hex'));
  const id = info.metadata.beaconID;
  if (id && id !== 'default') h.update(id, 'utf8');
  return h.digest('hex');
}

/** Why a chain info cannot draw, if it cannot: a hash it does not hash to, another scheme. */
export function chainProblem(info: ChainInfo): string | undefined {
  if (info.schemeID !== DRAW_SCHEME) {
    return `scheme ${info.schemeID}: a draw takes ${DRAW_SCHEME} (quicknet's) only`;
  }
  if (!(info.period > 0) || !Number.isInteger(info.genesis_time)) return 'period or genesis';
  if (chainHash(info) !== info.hash) return `its hash is ${chainHash(info)}, not ${info.hash}`;
  return undefined;
}

/** When round `round` is due (ms since the epoch). */
export const roundTime = (info: ChainInfo, round: number): number =>
  (info.genesis_time + (round - 1) * info.period) * 1_000;

/** The first round whose time is at or after `atMs`. */
export function firstRoundAtOrAfter(info: ChainInfo, atMs: number): number {
  const since = atMs - info.genesis_time * 1_000;
  if (since <= 0) return 1;
  return Math.ceil(since / (info.period * 1_000)) + 1;
}

/** The chain's name as a transcript reader sees it: quicknet's, or "local <hash prefix>". */
export const chainName = (info: ChainInfo): string =>
  info.hash === QUICKNET.hash
    ? 'drand quicknet'
    : `${info.metadata.beaconID} ${info.hash.slice(0, 12)}`;
