import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureBinaries, searchDirs } from '../services/binaries.js';
import { startRedisServer } from '../services/redis-server.js';

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => resolve(typeof a === 'object' && a ? a.port : 0));
    });
  });
}

/** A throwaway redis-server (no persistence) for a benchmark run, or the one at `url`. */
export async function benchRedis(
  url: string | undefined,
  pathEnv: string,
): Promise<{ url: string; stop(): Promise<void> }> {
  if (url) return { url, stop: async () => {} };
  const bins = ensureBinaries({ need: ['redis'], autoInstall: true, dirs: searchDirs(pathEnv) });
  const dir = mkdtempSync(join(tmpdir(), 'seckill-bench-'));
  const redis = await startRedisServer({
    port: await freePort(),
    dir,
    binDir: bins.redis!,
    persistence: 'none',
  });
  return {
    url: redis.url,
    async stop() {
      await redis.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
