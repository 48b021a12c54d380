/**
 * Beacon chains for the draw's tests: a local chain of quicknet's scheme served over HTTP in
 * drand's shape, and a relay that can lie (a forger's key, another chain's genuine rounds) until
 * told to tell the truth.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { LocalChain, newLocalChainKey } from '../../src/draw/local-chain.js';

export interface TestChain {
  chain: LocalChain;
  url: string;
  /** the variables that point a config at it */
  env: Record<string, string>;
  close(): Promise<void>;
}

const closeServer = (server: Server) =>
  new Promise<void>((resolve) => server.close(() => resolve()));

/** A local chain of `periodS` seconds a round, served on a free port. */
export async function startTestChain(periodS = 1, marginMs = 1_000): Promise<TestChain> {
  const chain = new LocalChain(newLocalChainKey(periodS), 'seckill-test');
  const { url, server } = await chain.serve(0);
  return {
    chain,
    url,
    env: {
      DRAW_CHAIN_INFO: JSON.stringify(chain.info),
      DRAW_BEACON_URLS: url,
      DRAW_BEACON_MARGIN_MS: String(marginMs),
    },
    close: () => closeServer(server),
  };
}

export type RelayMode = 'forged' | 'other-chain' | 'honest';

/**
 * A relay of `honest`'s chain that lies: `forged` answers each round with randomness of its own
 * choosing beside the chain's signature (a shop picking its draw), `other-chain` another chain's
 * genuine round (signed, but by another key); `honest` tells the truth. Counts the rounds asked.
 */
export async function startLyingRelay(honest: LocalChain, mode: RelayMode) {
  const other = new LocalChain({
    ...newLocalChainKey(honest.info.period),
    genesis: honest.info.genesis_time,
  });
  const state = { mode, asked: 0 };
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const answer = honest.answer(path, Date.now());
    const round = (answer.body as { round?: number }).round;
    if (answer.status === 200 && round !== undefined) {
      state.asked++;
      if (state.mode === 'forged') {
        answer.body = { ...honest.sign(round), randomness: '00'.repeat(31) + '01' };
      } else if (state.mode === 'other-chain') answer.body = other.sign(round);
    }
    res.writeHead(answer.status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(answer.body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    state,
    close: () => closeServer(server),
  };
}
