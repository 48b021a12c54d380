/**
 * `seckill verify-draw <transcript URL or file> [--chain HASH]`: the standalone verifier
 * (examples/verify-draw.mjs, a file a shopper reads and runs with Node alone) with the beacon's
 * BLS signature checked by drand-client against the transcript's chain (the standalone checks it
 * only when @noble/curves is installed). Exit 1 on any mismatch.
 */
import { fileURLToPath } from 'node:url';
import { verifyBeacon, type Beacon } from '../draw/beacon.js';
import type { ChainInfo } from '../draw/chain.js';
import { ExitError } from './output.js';

interface Verifier {
  loadTranscript(where: string): Promise<unknown>;
  verifyTranscript(
    transcript: unknown,
    opts: {
      chain?: string | undefined;
      verifySignature(chain: ChainInfo, beacon: Beacon): Promise<boolean | undefined>;
    },
  ): Promise<{ lines: string[]; problems: string[] }>;
}

/** examples/ beside src/ (a checkout) or beside dist/src/ (the build copies it there). */
const VERIFIER = fileURLToPath(new URL('../../examples/verify-draw.mjs', import.meta.url));

export async function verifyDraw(where: string, values: { chain?: string }): Promise<void> {
  const verifier = (await import(VERIFIER)) as Verifier;
  let transcript: unknown;
  try {
    transcript = await verifier.loadTranscript(where);
  } catch (err) {
    throw new ExitError(`cannot read the transcript: ${(err as Error).message}`, 1);
  }
  const configured = process.env.DRAW_CHAIN_INFO;
  const chain =
    values.chain ?? (configured ? (JSON.parse(configured) as { hash?: string }).hash : undefined);
  const { lines, problems } = await verifier.verifyTranscript(transcript, {
    chain,
    verifySignature: (chain, beacon) => verifyBeacon(chain, beacon, beacon.round),
  });
  for (const line of lines) process.stdout.write(`${line}\n`);
  for (const p of problems) process.stdout.write(`MISMATCH: ${p}\n`);
  if (problems.length > 0) throw new ExitError('the draw does not verify', 1);
  process.stdout.write('OK: the draw verifies\n');
}
