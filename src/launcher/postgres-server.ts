/**
 * A real PostgreSQL on loopback (TCP only, trust auth for the local `seckill` role), initdb on
 * first run. PostgreSQL refuses to run as root, so as root it runs as the `postgres` (or
 * `nobody`) user.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import pg from 'pg';
import {
  assertPortFree,
  isAlive,
  LaunchError,
  pidFromFile,
  spawnService,
  stopStale,
  tail,
  type ServiceProcess,
} from './process.js';

export interface PostgresServerOptions {
  port: number;
  /** Cluster folder (created and initdb'ed on first run). */
  dir: string;
  /** Directory holding postgres and initdb. */
  binDir: string;
  /** Database to create if missing (default `seckill`). */
  database?: string;
  /** Extra server settings (`-c name=value`), e.g. fsync=off for throwaway test servers. */
  settings?: Record<string, string>;
  startTimeoutMs?: number;
  progress?: (line: string) => void;
}

export interface RunningPostgres {
  url: string;
  port: number;
  /** The cluster folder actually used (see {@link clusterDir}). */
  dir: string;
  process: ServiceProcess;
  stop(): Promise<void>;
}

export const PG_ROLE = 'seckill';

interface RunAs {
  uid: number;
  gid: number;
  name: string;
}

/** Who runs the server: ourselves, or (as root) the `postgres` or `nobody` account. */
export function runAs(): RunAs | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const passwd = readFileSync('/etc/passwd', 'utf8').split('\n');
  for (const name of ['postgres', 'nobody']) {
    const row = passwd.find((l) => l.startsWith(`${name}:`))?.split(':');
    if (row) return { name, uid: Number(row[2]), gid: Number(row[3]) };
  }
  throw new Error('running as root and neither a "postgres" nor a "nobody" account exists');
}

function reachableBy(user: RunAs, dir: string): boolean {
  const r = spawnSync('/bin/sh', ['-c', 'cd "$1" && test -w .', 'sh', dir], {
    uid: user.uid,
    gid: user.gid,
  });
  return r.status === 0;
}

const ALT_ROOT = '/var/tmp';
const ALT_PREFIX = 'seckill-pg-';

/**
 * The folder the cluster lives in: `dir`, unless the service account cannot reach it (a project
 * under /root, mode 700), in which case a stable folder under /var/tmp named after `dir`, with
 * `<it>.owner` naming `dir`. Such clusters whose `dir` is gone (a temp data folder, a deleted
 * checkout) and that no server runs are removed here, so they do not pile up.
 */
export function clusterDir(dir: string, user: RunAs | undefined): string {
  mkdirSync(dir, { recursive: true });
  if (!user) return dir;
  removeOrphanClusters();
  chownSync(dir, user.uid, user.gid);
  if (reachableBy(user, dir)) return dir;
  if (openTempAncestors(dir) && reachableBy(user, dir)) return dir;
  const alt = join(
    ALT_ROOT,
    `${ALT_PREFIX}${createHash('sha1').update(resolve(dir)).digest('hex').slice(0, 10)}`,
  );
  mkdirSync(alt, { recursive: true, mode: 0o700 });
  chownSync(alt, user.uid, user.gid);
  writeFileSync(`${alt}.owner`, `${resolve(dir)}\n`);
  return alt;
}

/**
 * A data folder inside a private temp dir (`mktemp -d` makes it 0700): lets others traverse
 * (x, not read) the temp dirs of ours between it and the system temp folder, so the cluster can
 * stay in the data folder (and go with it). Outside the temp folder nothing is changed.
 * @returns whether anything was changed
 */
function openTempAncestors(dir: string): boolean {
  const root = resolve(tmpdir());
  let changed = false;
  for (let d = dirname(resolve(dir)); d.startsWith(`${root}/`); d = dirname(d)) {
    const st = statSync(d);
    if (st.uid === process.getuid?.() && (st.mode & 0o001) === 0) {
      chmodSync(d, (st.mode & 0o7777) | 0o001);
      changed = true;
    }
  }
  return changed;
}

/** Clusters under /var/tmp whose owning data folder is gone and that no server runs. */
export function removeOrphanClusters(root = ALT_ROOT): string[] {
  const removed: string[] = [];
  let names: string[] = [];
  try {
    names = readdirSync(root);
  } catch {
    return removed;
  }
  for (const name of names) {
    if (!name.startsWith(ALT_PREFIX) || !name.endsWith('.owner')) continue;
    const alt = join(root, name.slice(0, -'.owner'.length));
    const owner = readFileSync(join(root, name), 'utf8').trim();
    if (!owner || existsSync(owner)) continue;
    const pid = pidFromFile(join(alt, 'postmaster.pid'));
    if (pid !== undefined && isAlive(pid)) continue;
    for (const p of [alt, `${alt}.log`, `${alt}.owner`])
      rmSync(p, { recursive: true, force: true });
    removed.push(alt);
  }
  return removed;
}

async function answers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1_000 });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

export async function startPostgres(opts: PostgresServerOptions): Promise<RunningPostgres> {
  const progress = opts.progress ?? (() => {});
  const user = runAs();
  const dir = clusterDir(opts.dir, user);
  if (dir !== opts.dir)
    progress(`PostgreSQL runs as ${user?.name}, which cannot reach ${opts.dir}; using ${dir}`);
  await stopStale(join(dir, 'postmaster.pid'), 'postgres', 'SIGINT');
  await assertPortFree(opts.port);

  const logFile = `${dir}.log`;
  if (!existsSync(join(dir, 'PG_VERSION'))) {
    progress(`initdb ${dir}`);
    const r = spawnSync(
      join(opts.binDir, 'initdb'),
      [
        '-D',
        dir,
        '-U',
        PG_ROLE,
        '--auth=trust',
        '--encoding=UTF8',
        '--no-locale',
        '--no-instructions',
      ],
      { encoding: 'utf8', ...(user && { uid: user.uid, gid: user.gid }) },
    );
    if (r.status !== 0)
      throw new Error(`initdb failed (exit ${r.status}):\n${r.stderr || r.stdout}`);
  }

  const settings = {
    listen_addresses: '127.0.0.1',
    unix_socket_directories: '',
    max_connections: '200',
    ...opts.settings,
  };
  const proc = spawnService({
    name: 'postgres',
    command: join(opts.binDir, 'postgres'),
    args: [
      '-D',
      dir,
      '-p',
      String(opts.port),
      ...Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`]),
    ],
    logFile,
    stopSignal: 'SIGINT',
    ...(user && { uid: user.uid, gid: user.gid }),
  });

  const adminUrl = `postgres://${PG_ROLE}@127.0.0.1:${opts.port}/postgres`;
  const deadline = Date.now() + (opts.startTimeoutMs ?? 60_000);
  let exited = false;
  void proc.exited.then(() => (exited = true));
  while (!(await answers(adminUrl))) {
    if (exited || Date.now() > deadline) {
      await proc.stop();
      throw new LaunchError(
        `PostgreSQL on port ${opts.port} did not come up${exited ? ' (it exited)' : ''}; ` +
          `last lines of ${logFile}:\n${tail(logFile)}`,
      );
    }
    await new Promise((r) => setTimeout(r, 100));
  }

  const database = opts.database ?? 'seckill';
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    const { rowCount } = await admin.query('select 1 from pg_database where datname = $1', [
      database,
    ]);
    if (!rowCount) await admin.query(`create database "${database.replaceAll('"', '""')}"`);
  } finally {
    await admin.end();
  }
  return {
    url: `postgres://${PG_ROLE}@127.0.0.1:${opts.port}/${database}`,
    port: opts.port,
    dir,
    process: proc,
    stop: () => proc.stop(),
  };
}
