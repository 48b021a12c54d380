#!/usr/bin/env node
// Verifies a seckill draw from its public transcript alone, with Node.js and nothing else:
//
//   node verify-draw.mjs https://shop.example/products/sneaker-drop/draw
//   node verify-draw.mjs transcript.json [--chain <chain hash>]
//
// It recomputes the Merkle root of the frozen list (RFC 6962, over the sorted entry ids: every id
// of the winners and the waitlist), checks that the freeze came before the beacon round was due,
// that the beacon's randomness is the SHA-256 of its signature, recomputes every rank
// (SHA-256(randomness || entry id), ascending) and checks the winners and the waitlist are that
// order, then prints them. Any mismatch: exit 1.
//
// The beacon's BLS signature needs a pairing, which Node.js alone does not have: with
// @noble/curves installed (npm i @noble/curves) this file checks it too; without, it says the
// signature was NOT checked. `npx seckill verify-draw` always checks it (with drand-client).
//
// The chain: a transcript names its chain by its drand info. Its hash is recomputed here (drand's
// formula) and must match. drand's quicknet is pinned below, key and all; any other chain (a
// shop's local chain: its randomness is only as good as its key's holder) is refused unless you
// name its hash with --chain.
import { hash as sha } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';

export const QUICKNET = {
  public_key:
    '83cf0f2896adee7eb8b5f01fcad3912212c437e0073e911fb90022d3e760183c8c4b450b6a0a6c3ac6a5776a2d1064510d1fec758c921cc22b0e17e63aaf4bcb5ed66304de9cf809bd274ca73bab4af5a6e9c76a4bc09e76eae8991ef5ece45a',
  period: 3,
  genesis_time: 1692803367,
  hash: '52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971',
  groupHash: 'f477d5c89f21a17c863a7f937c6a6d15859414d2be09cd448d4279af331c5d3e',
  schemeID: 'bls-unchained-g1-rfc9380',
  metadata: { beaconID: 'quicknet' },
};
const SCHEME = 'bls-unchained-g1-rfc9380';
const DST = 'BLS_SIG_BLS12381G1_XMD:SHA-256_SSWU_RO_NUL_';

const sha256 = (data) => sha('sha256', data, 'buffer');

/** drand's chain hash: SHA-256(period u32 BE || genesis i64 BE || key || group hash || beacon id). */
export function chainHash(info) {
  const head = Buffer.alloc(12);
  head.writeUInt32BE(info.period, 0);
  head.writeBigInt64BE(BigInt(info.genesis_time), 4);
  const id = info.metadata?.beaconID;
  return sha256(
    Buffer.concat([
      head,
      Buffer.from(info.public_key, 'hex'),
      Buffer.from(info.groupHash, 'hex'),
      id && id !== 'default' ? Buffer.from(id, 'utf8') : Buffer.alloc(0),
    ]),
  ).toString('hex');
}

// SHA-256 in plain JavaScript for the millions of short hashes a large draw takes: node:crypto's
// one call per hash costs more in crossing into C++ than the hash itself. Checked against
// node:crypto by the tests (test/draw/verifier.test.ts).
const K = Int32Array.from(
  '428a2f98 71374491 b5c0fbcf e9b5dba5 3956c25b 59f111f1 923f82a4 ab1c5ed5 d807aa98 12835b01 243185be 550c7dc3 72be5d74 80deb1fe 9bdc06a7 c19bf174 e49b69c1 efbe4786 0fc19dc6 240ca1cc 2de92c6f 4a7484aa 5cb0a9dc 76f988da 983e5152 a831c66d b00327c8 bf597fc7 c6e00bf3 d5a79147 06ca6351 14292967 27b70a85 2e1b2138 4d2c6dfc 53380d13 650a7354 766a0abb 81c2c92e 92722c85 a2bfe8a1 a81a664b c24b8b70 c76c51a3 d192e819 d6990624 f40e3585 106aa070 19a4c116 1e376c08 2748774c 34b0bcb5 391c0cb3 4ed8aa4a 5b9cca4f 682e6ff3 748f82ee 78a5636f 84c87814 8cc70208 90befffa a4506ceb bef9a3f7 c67178f2'
    .split(' ')
    .map((w) => parseInt(w, 16) | 0),
);
const IV = Int32Array.from([
  0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
]);
const W = new Int32Array(64);
const H = new Int32Array(8);

/** One compression of H with the block in W[0..16). */
function compress() {
  for (let i = 16; i < 64; i++) {
    const w15 = W[i - 15];
    const w2 = W[i - 2];
    const s0 = ((w15 >>> 7) | (w15 << 25)) ^ ((w15 >>> 18) | (w15 << 14)) ^ (w15 >>> 3);
    const s1 = ((w2 >>> 17) | (w2 << 15)) ^ ((w2 >>> 19) | (w2 << 13)) ^ (w2 >>> 10);
    W[i] = (W[i - 16] + s0 + W[i - 7] + s1) | 0;
  }
  let a = H[0],
    b = H[1],
    c = H[2],
    d = H[3],
    e = H[4],
    f = H[5],
    g = H[6],
    h = H[7];
  for (let i = 0; i < 64; i++) {
    const s1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
    const t1 = (h + s1 + ((e & f) ^ (~e & g)) + K[i] + W[i]) | 0;
    const s0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
    const t2 = (s0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
    h = g;
    g = f;
    f = e;
    e = (d + t1) | 0;
    d = c;
    c = b;
    b = a;
    a = (t1 + t2) | 0;
  }
  H[0] = (H[0] + a) | 0;
  H[1] = (H[1] + b) | 0;
  H[2] = (H[2] + c) | 0;
  H[3] = (H[3] + d) | 0;
  H[4] = (H[4] + e) | 0;
  H[5] = (H[5] + f) | 0;
  H[6] = (H[6] + g) | 0;
  H[7] = (H[7] + h) | 0;
}

const PAD = new Uint8Array(65_664);

/** SHA-256 of bytes[0..len) into out[at..at + 8) (big-endian words). */
export function sha256Words(bytes, len, out, at) {
  PAD.set(bytes.subarray(0, len));
  PAD[len] = 0x80;
  const total = ((len + 72) >> 6) << 6;
  PAD.fill(0, len + 1, total - 4);
  const bits = len * 8;
  PAD[total - 4] = bits >>> 24;
  PAD[total - 3] = bits >>> 16;
  PAD[total - 2] = bits >>> 8;
  PAD[total - 1] = bits;
  H.set(IV);
  for (let off = 0; off < total; off += 64) {
    for (let i = 0; i < 16; i++) {
      const p = off + i * 4;
      W[i] = (PAD[p] << 24) | (PAD[p + 1] << 16) | (PAD[p + 2] << 8) | PAD[p + 3];
    }
    compress();
  }
  out.set(H, at);
}

/** SHA-256(0x01 || node l || node r) of two 8-word nodes into out[at..): RFC 6962's inner node. */
function nodeWords(l, li, r, ri, out, at) {
  H.set(IV);
  W[0] = (1 << 24) | (l[li] >>> 8);
  for (let k = 1; k < 8; k++) W[k] = (l[li + k - 1] << 24) | (l[li + k] >>> 8);
  W[8] = (l[li + 7] << 24) | (r[ri] >>> 8);
  for (let k = 1; k < 8; k++) W[8 + k] = (r[ri + k - 1] << 24) | (r[ri + k] >>> 8);
  compress();
  W[0] = (r[ri + 7] << 24) | 0x800000;
  W.fill(0, 1, 15);
  W[15] = 65 * 8;
  compress();
  out.set(H, at);
}

const hexOf = (words, at) => {
  let s = '';
  for (let k = 0; k < 8; k++) s += (words[at + k] >>> 0).toString(16).padStart(8, '0');
  return s;
};

/** RFC 6962 Merkle Tree Hash of ids[from..to) (in the order given), built bottom-up, as 8 words. */
function subtreeWords(ids, from, to) {
  const bytes = Buffer.alloc(65_536 * 3 + 1);
  let count = to - from;
  let level = new Int32Array(count * 8);
  for (let i = 0; i < count; i++) {
    bytes[0] = 0;
    const n = bytes.write(ids[from + i], 1, 'utf8');
    sha256Words(bytes, n + 1, level, i * 8);
  }
  while (count > 1) {
    const up = new Int32Array(Math.ceil(count / 2) * 8);
    let j = 0;
    for (let i = 0; i + 1 < count; i += 2, j++)
      nodeWords(level, i * 8, level, i * 8 + 8, up, j * 8);
    if (count % 2 === 1) up.set(level.subarray((count - 1) * 8, count * 8), j * 8);
    level = up;
    count = Math.ceil(count / 2);
  }
  return level.subarray(0, 8);
}

/** RFC 6962 Merkle Tree Hash over ids (in the order given). */
export function merkleRoot(ids) {
  if (ids.length === 0) return sha256(Buffer.alloc(0)).toString('hex');
  return hexOf(subtreeWords(ids, 0, ids.length), 0);
}

/** RFC 6962's split of n > 1 leaves: the largest power of two below n. */
const splitOf = (n) => 2 ** Math.floor(Math.log2(n - 1));

/** Ties of the first word are this rare (n^2 / 2^33): ordered by every word, then the id. */
function byEveryWord(ranks, ids) {
  return (a, b) => {
    for (let k = 0; k < 8; k++) {
      const x = ranks[a * 8 + k] >>> 0;
      const y = ranks[b * 8 + k] >>> 0;
      if (x !== y) return x - y;
    }
    return Buffer.compare(Buffer.from(ids[a]), Buffer.from(ids[b]));
  };
}

/** Up to this many ids, a rank's first word and its index share one float64 (2^32 * 2^21 < 2^53). */
const INDEX_SPAN = 2 ** 21;

/**
 * The positions of ids in rank order: SHA-256(randomness || id), ascending (ties, never seen:
 * the id's bytes). The first word of each and its index are sorted as numbers (a typed array
 * sorts natively, many times faster than a comparison function), then each run of equal first
 * words, if any, by every word.
 */
export function rankPositions(ids, randomnessHex) {
  const randomness = Buffer.from(randomnessHex, 'hex');
  const bytes = Buffer.alloc(65_536 * 3 + randomness.length);
  randomness.copy(bytes, 0);
  const n = ids.length;
  const ranks = new Int32Array(n * 8);
  for (let i = 0; i < n; i++) {
    const len = bytes.write(ids[i], randomness.length, 'utf8');
    sha256Words(bytes, randomness.length + len, ranks, i * 8);
  }
  const full = byEveryWord(ranks, ids);
  if (n > INDEX_SPAN) return Int32Array.from(Array.from(ids, (_, i) => i).sort(full));
  const keys = new Float64Array(n);
  for (let i = 0; i < n; i++) keys[i] = (ranks[i * 8] >>> 0) * INDEX_SPAN + i;
  keys.sort();
  const order = new Int32Array(n);
  for (let i = 0; i < n; i++) order[i] = keys[i] % INDEX_SPAN;
  for (let s = 0, i = 1; i <= n; i++) {
    if (i < n && ranks[order[i] * 8] === ranks[order[s] * 8]) continue;
    if (i - s > 1) order.set(Array.from(order.subarray(s, i)).sort(full), s);
    s = i;
  }
  return order;
}

/** The ids in rank order. */
export const rankOrder = (ids, randomnessHex) =>
  Array.from(rankPositions(ids, randomnessHex), (i) => ids[i]);

/** Lists this long use the second core: it ranks, then hashes the tree's right side. */
const RANK_APART = 50_000;

/**
 * A worker thread of this same file (ids travel joined by newlines): it ranks the ids, then
 * answers the Merkle subtree of the ids sent next, while this thread hashes the left side.
 */
function secondCore(ids, randomnessHex) {
  const worker = new Worker(new URL(import.meta.url), {
    workerData: { ids: ids.join('\n'), randomness: randomnessHex },
  });
  const answers = [];
  const waiting = [];
  worker.on('message', (m) => (waiting.length > 0 ? waiting.shift().resolve(m) : answers.push(m)));
  worker.on('error', (err) => waiting.splice(0).forEach((w) => w.reject(err)));
  const next = () =>
    answers.length > 0
      ? Promise.resolve(answers.shift())
      : new Promise((resolve, reject) => waiting.push({ resolve, reject }));
  const positions = next();
  return {
    positions,
    subtree(part) {
      worker.postMessage(part.join('\n'));
      return positions.then(next).finally(() => worker.terminate());
    },
  };
}

if (!isMainThread && workerData?.randomness) {
  const ids = workerData.ids === '' ? [] : workerData.ids.split('\n');
  const positions = rankPositions(ids, workerData.randomness);
  parentPort.postMessage(positions, [positions.buffer]);
  parentPort.once('message', (joined) => {
    const part = joined.split('\n');
    parentPort.postMessage(subtreeWords(part, 0, part.length).slice());
  });
}

/** UTF-8 byte order (the frozen list's). */
export function sortedIds(ids) {
  const copy = [...ids];
  if (copy.every((id) => /^[\x00-\x7f]*$/.test(id))) return copy.sort();
  return copy.sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
}

const roundTime = (chain, round) => (chain.genesis_time + (round - 1) * chain.period) * 1_000;

/** The BLS check of a beacon with @noble/curves, if it is installed; undefined when it is not. */
async function nobleSignatureCheck(chain, beacon) {
  let bls;
  try {
    ({ bls12_381: bls } = await import('@noble/curves/bls12-381'));
  } catch {
    return undefined;
  }
  const round = Buffer.alloc(8);
  round.writeBigUInt64BE(BigInt(beacon.round));
  const message = bls.G1.hashToCurve(sha256(round), { DST });
  return bls.verifyShortSignature(beacon.signature, message, chain.public_key);
}

/**
 * Checks a transcript. `verifySignature(chain, beacon)` answers whether the beacon's signature
 * holds (undefined: not checked); the default uses @noble/curves when it is installed.
 * @returns the lines to print, the problems found (none: it verifies) and whether the signature
 *   was checked
 */
export async function verifyTranscript(t, opts = {}) {
  const lines = [];
  const problems = [];
  const fail = (what) => problems.push(what);
  const chain = t.chain ?? {};
  lines.push(`draw of ${t.productId} (sale ${t.epoch}): ${t.state}, ${t.entries} entries`);
  if (chain.schemeID !== SCHEME) fail(`the chain's scheme is ${chain.schemeID}, not ${SCHEME}`);
  const hash = chain.public_key ? chainHash(chain) : '';
  if (hash !== chain.hash) fail(`the chain info hashes to ${hash}, not to its hash ${chain.hash}`);
  if (chain.hash === QUICKNET.hash) {
    if (chain.public_key !== QUICKNET.public_key)
      fail("the chain claims quicknet's hash with another key");
    lines.push(`chain: drand quicknet (${chain.hash})`);
  } else if (opts.chain && opts.chain === chain.hash) {
    lines.push(
      `chain: ${chain.metadata?.beaconID} ${chain.hash} (named with --chain: trusted as its key's holder is)`,
    );
  } else {
    fail(
      `the chain ${chain.hash} (${chain.metadata?.beaconID}) is not drand's quicknet: name it with --chain ${chain.hash} to trust it`,
    );
  }
  if (t.state !== 'drawn') {
    lines.push(
      t.state === 'frozen' ? `frozen: round ${t.round} is due at ${t.roundAt}` : 'not frozen yet',
    );
    return { lines, problems, signature: 'not drawn' };
  }
  const { beacon } = t;
  if (beacon.round !== t.round)
    fail(`the beacon is round ${beacon.round}, the freeze named ${t.round}`);
  const due = roundTime(chain, t.round);
  if (!(Date.parse(t.frozenAt) < due)) {
    fail(
      `frozen at ${t.frozenAt}, not before round ${t.round} was due (${new Date(due).toISOString()})`,
    );
  }
  if (sha256(Buffer.from(beacon.signature, 'hex')).toString('hex') !== beacon.randomness) {
    fail("the beacon's randomness is not the SHA-256 of its signature");
  }
  const check = opts.verifySignature ?? nobleSignatureCheck;
  const signed = await check(chain, beacon);
  if (signed === false) fail(`the beacon's signature does not verify under the chain's key`);
  const all = [...t.winners, ...t.waitlist];
  if (all.length !== t.entries) fail(`${all.length} ids listed, the freeze counted ${t.entries}`);
  const apart = all.length >= RANK_APART && !all.some((id) => id.includes('\n'));
  const second = apart ? secondCore(all, beacon.randomness) : undefined;
  const sorted = sortedIds(all);
  const twice = sorted.findIndex((id, i) => i > 0 && id === sorted[i - 1]);
  if (twice > 0) fail(`an entry id is listed twice: ${sorted[twice]}`);
  let root;
  if (second) {
    const k = splitOf(sorted.length);
    const right = second.subtree(sorted.slice(k));
    const top = new Int32Array(8);
    nodeWords(subtreeWords(sorted, 0, k), 0, await right, 0, top, 0);
    root = hexOf(top, 0);
  } else root = merkleRoot(sorted);
  if (root !== t.root) fail(`the entries' Merkle root is ${root}, the freeze published ${t.root}`);
  else lines.push(`root ${root}: the ${all.length} entries are the frozen list`);
  // listed in the beacon's order: rank r's position among the listed ids is r - 1
  const positions = second ? await second.positions : rankPositions(all, beacon.randomness);
  const at = positions.findIndex((p, i) => p !== i);
  if (at >= 0) fail(`rank ${at + 1} is ${all[positions[at]]}, the transcript lists ${all[at]}`);
  else lines.push(`ranks: the ${all.length} entries are in the beacon's order`);
  const winners = Math.min(all.length, Math.ceil(t.units / (t.limitPerUser ?? 1)));
  if (t.winners.length !== winners)
    fail(`${t.winners.length} winners, ${t.units} units make ${winners}`);
  const offeredRanks = positions.subarray(0, Math.max(t.offered, t.winners.length));
  const offered = new Set(Array.from(offeredRanks, (i) => all[i]));
  const stray = t.bought.filter((id) => !offered.has(id));
  if (stray.length > 0) fail(`bought without a purchase right: ${stray.join(', ')}`);
  lines.push(
    `beacon round ${beacon.round}: signature ${signed === undefined ? 'NOT checked (install @noble/curves, or use npx seckill verify-draw)' : 'verified'}`,
  );
  lines.push(`winners (${t.winners.length}): ${t.winners.join(' ')}`);
  lines.push(`waitlist (${t.waitlist.length}): ${t.waitlist.join(' ')}`);
  lines.push(`offered ${t.offered} ranks; bought: ${t.bought.join(' ') || 'none'}`);
  return { lines, problems, signature: signed === undefined ? 'not checked' : 'verified' };
}

export async function loadTranscript(where) {
  if (/^https?:\/\//.test(where)) {
    const res = await fetch(where);
    if (!res.ok) throw new Error(`${where}: ${res.status}`);
    return res.json();
  }
  return JSON.parse(await readFile(where, 'utf8'));
}

async function main(argv) {
  const where = argv.find((a) => !a.startsWith('--') && argv[argv.indexOf(a) - 1] !== '--chain');
  const chainAt = argv.indexOf('--chain');
  if (!where) {
    console.error('usage: node verify-draw.mjs <transcript URL or file> [--chain <hash>]');
    return 2;
  }
  const { lines, problems } = await verifyTranscript(await loadTranscript(where), {
    chain: chainAt >= 0 ? argv[chainAt + 1] : undefined,
  });
  for (const line of lines) console.log(line);
  for (const p of problems) console.log(`MISMATCH: ${p}`);
  console.log(problems.length === 0 ? 'OK: the draw verifies' : 'FAILED');
  return problems.length === 0 ? 0 : 1;
}

if (isMainThread && import.meta.url === `file://${process.argv[1]}`) {
  main(process.argv.slice(2)).then(
    (code) => (process.exitCode = code),
    (err) => {
      console.error(err.message);
      process.exitCode = 1;
    },
  );
}
