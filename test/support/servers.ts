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
  // a folder of its own unless given: removed with the server's final stop
  const owned = opts.dir === undefined ? tempDir('redis') : undefined;
  const dir = opts.dir ?? owned!.path;
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
    async stop() {
      await current.stop();
      owned?.remove();
    },
    async restart() {
      await current.stop();
      current = await start();
      return current;
    },
  };
}

export async function startTestPostgres(dir?: string, port?: number): Promise<RunningPostgres> {
  // a folder of its own unless given: removed when the server stops
  const owned = dir === undefined ? tempDir('pg') : undefined;
  const pg = await startPostgres({
    port: port ?? (await freePort()),
    dir: dir ?? join(owned!.path, 'cluster'),
    binDir: binDirs().postgres,
    // Throwaway data: durability off for speed.
    settings: { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off' },
  });
  if (!owned) return pg;
  return {
    ...pg,
    async stop() {
      await pg.stop();
      owned.remove();
    },
  };
}
