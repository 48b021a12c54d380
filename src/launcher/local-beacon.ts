/**
 * `up`'s local beacon chain (docs/draw.md#the-beacon-and-the-draw): a machine without the internet
 * cannot reach drand's relays, so `up` serves a chain of quicknet's scheme and points the draws
 * at it, unless DRAW_CHAIN_INFO names a chain (quicknet included) or LOCAL_BEACON_PORT is 0. Its
 * key is kept in DATA_DIR/beacon-key (0600, made once): a restart serves the same chain, so a
 * draw frozen before it is drawn after it by the round it was frozen for.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { join, resolve } from 'node:path';
import { LocalChain, newLocalChainKey, type LocalChainKey } from '../draw/local-chain.js';

const BEACON_KEY_FILE = 'beacon-key';

/** The chain `up` serves, or undefined when the draws are pointed elsewhere (or nowhere). */
export function localBeacon(
  env: NodeJS.ProcessEnv,
  dataDir: string,
  port: number,
): { chain: LocalChain; port: number } | undefined {
  if (port === 0 || env.DRAW_CHAIN_INFO !== undefined) return undefined;
  return { chain: new LocalChain(beaconKey(dataDir), 'seckill-local'), port };
}

/** The variables that point the draws at the local chain (the same in every API process). */
export function localBeaconVars(beacon: { chain: LocalChain; port: number }) {
  return {
    DRAW_CHAIN_INFO: JSON.stringify(beacon.chain.info),
    DRAW_BEACON_URLS: `http://127.0.0.1:${beacon.port}`,
  };
}

/** Serves the chain on 127.0.0.1 only: its rounds are for this machine's draws. */
export async function serveLocalBeacon(beacon: {
  chain: LocalChain;
  port: number;
}): Promise<Server> {
  return (await beacon.chain.serve(beacon.port, '127.0.0.1')).server;
}

function beaconKey(dataDir: string): LocalChainKey {
  const file = join(resolve(dataDir), BEACON_KEY_FILE);
  if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as LocalChainKey;
  mkdirSync(resolve(dataDir), { recursive: true });
  const key = newLocalChainKey(3);
  writeFileSync(file, `${JSON.stringify(key)}\n`, { mode: 0o600 });
  return key;
}
