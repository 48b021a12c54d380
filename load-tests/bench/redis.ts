import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureBinaries, searchDirs } from '../../src/launcher/binaries.js';
import { freePort } from '../../src/launcher/process.js';
import { startRedisServer } from '../../src/launcher/redis-server.js';

/** A throwaway redis-server (no persistence) for a benchmark run, or the one at `url`. */
export async function benchRedis(
  url: string | undefined,
  pathEnv: string,
): Promise<{ url: string; pid?: number; stop(): Promise<void> }> {
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
    pid: redis.process.pid,
    async stop() {
      await redis.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
