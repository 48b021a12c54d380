/**
 * Throwaway real servers for tests, started with the product's own launcher code in a temp folder.
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureBinaries, searchDirs } from '../../src/launcher/binaries.js';
import { startPostgres, type RunningPostgres } from '../../src/launcher/postgres-server.js';
import { startRedisServer, type RunningRedis } from '../../src/launcher/redis-server.js';
import { freePort } from './ports.js';

/** As the launcher does: found on PATH, or installed with apt-get when root on Debian. */
export function binDirs() {
  const bins = ensureBinaries({
    need: ['redis', 'postgres'],
    autoInstall: process.env.AUTO_INSTALL !== 'false',
    dirs: searchDirs(process.env.PATH),
    progress: (line) => process.stderr.write(`[test setup] ${line}\n`),
  });
  return { redis: bins.redis!, postgres: bins.postgres! };
}

/** Temp dirs of servers a test file started without a folder of its own: gone when it ends. */
const owned = new Set<string>();
process.once('exit', () => {
  for (const path of owned) rmSync(path, { recursive: true, force: true });
});

/** A temp dir removed when this test process exits (the caller may remove it sooner). */
function ownedTempDir(label: string): string {
  const { path } = tempDir(label);
  owned.add(path);
  return path;
}

export function tempDir(label: string): { path: string; remove(): void } {
  const path = mkdtempSync(join(tmpdir(), `seckill-${label}-`));
  // mkdtemp makes it 0700; PostgreSQL runs as another user when we are root and must reach it.
  chmodSync(path, 0o755);
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

/**
 * A dedicated redis-server for tests that restart, pause or kill it (so they do not disturb
 * files running in parallel). DEBUG is enabled for local connections.
 */
export async function startTestRedis(
  opts: { persistence?: 'aof' | 'none'; dir?: string; port?: number } = {},
): Promise<RunningRedis & { dir: string; restart(): Promise<RunningRedis> }> {
  const dir = opts.dir ?? ownedTempDir('redis');
  const port = opts.port ?? (await freePort());
  const start = () =>
    startRedisServer({
      port,
      dir,
      binDir: binDirs().redis,
      persistence: opts.persistence ?? 'none',
      extraArgs: ['--enable-debug-command', 'local'],
    });
  let current = await start();
  return {
    get url() {
      return current.url;
    },
    port,
    dir,
    get process() {
      return current.process;
    },
    stop: () => current.stop(),
    async restart() {
      await current.stop();
      current = await start();
      return current;
    },
  };
}

export async function startTestPostgres(dir?: string, port?: number): Promise<RunningPostgres> {
  return startPostgres({
    port: port ?? (await freePort()),
    dir: dir ?? join(ownedTempDir('pg'), 'cluster'),
    binDir: binDirs().postgres,
    // Throwaway data: durability off for speed.
    settings: { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off' },
  });
}
