/**
 * Finds the redis-server and PostgreSQL binaries; as root on Debian/Ubuntu installs what is
 * missing with apt-get, otherwise fails with the exact install line for apt, brew and Docker.
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, readdirSync } from 'node:fs';
import { delimiter, join } from 'node:path';

export type ServiceName = 'redis' | 'postgres';

interface Spec {
  /** Executables that must all be present in one directory. */
  executables: string[];
  apt: string;
  brew: string;
  docker: string;
  envVar: string;
}

const SPECS: Record<ServiceName, Spec> = {
  redis: {
    executables: ['redis-server'],
    apt: 'redis-server',
    brew: 'redis',
    docker: 'docker compose up -d redis   # then REDIS_URL=redis://127.0.0.1:6379',
    envVar: 'REDIS_URL',
  },
  postgres: {
    executables: ['postgres', 'initdb'],
    apt: 'postgresql',
    brew: 'postgresql@16',
    docker:
      'docker compose up -d postgres   # then DATABASE_URL=postgres://seckill:seckill@127.0.0.1:5432/seckill',
    envVar: 'DATABASE_URL',
  },
};

export class MissingBinaryError extends Error {
  constructor(readonly missing: ServiceName[]) {
    const apt = missing.map((m) => SPECS[m].apt).join(' ');
    const brew = missing.map((m) => SPECS[m].brew).join(' ');
    super(
      [
        `Not found: ${missing.map((m) => SPECS[m].executables.join(' + ')).join(', ')}.`,
        'Install with one of:',
        `  apt:    sudo apt-get install -y ${apt}`,
        `  brew:   brew install ${brew}`,
        ...missing.map((m) => `  Docker: ${SPECS[m].docker}`),
        `Or point ${missing.map((m) => SPECS[m].envVar).join(' / ')} at a server you already run.`,
      ].join('\n'),
    );
    this.name = 'MissingBinaryError';
  }
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** PATH, then Debian's versioned PostgreSQL folders (newest first), which are not on PATH. */
export function searchDirs(pathEnv: string | undefined): string[] {
  const dirs = (pathEnv ?? '').split(delimiter).filter(Boolean);
  const pgRoot = '/usr/lib/postgresql';
  if (existsSync(pgRoot)) {
    const versions = readdirSync(pgRoot)
      .filter((v) => /^\d+$/.test(v))
      .sort((a, b) => Number(b) - Number(a));
    dirs.push(...versions.map((v) => join(pgRoot, v, 'bin')));
  }
  return dirs;
}

/** The directory that holds every executable of `service`, or undefined. */
export function findBinDir(service: ServiceName, dirs: string[]): string | undefined {
  const { executables } = SPECS[service];
  return dirs.find((d) => executables.every((e) => isExecutable(join(d, e))));
}

export interface EnsureOptions {
  need: ServiceName[];
  autoInstall: boolean;
  /** Directories to search, e.g. {@link searchDirs} of the configured PATH. */
  dirs: string[];
  progress?: (line: string) => void;
}

function canApt(): boolean {
  return (
    process.getuid?.() === 0 &&
    existsSync('/etc/debian_version') &&
    isExecutable('/usr/bin/apt-get')
  );
}

function aptInstall(packages: string[], progress: (line: string) => void): void {
  progress(`installing ${packages.join(' ')} with apt-get (running as root on Debian)...`);
  for (const args of [
    ['update', '-qq'],
    ['install', '-y', '-qq', '--no-install-recommends', ...packages],
  ]) {
    const r = spawnSync('apt-get', args, {
      stdio: ['ignore', 'inherit', 'inherit'],
      // inherits the environment; only the prompt behaviour is set
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
    if (r.status !== 0) throw new Error(`apt-get ${args.join(' ')} failed (exit ${r.status})`);
  }
}

/**
 * Locates (and when allowed, installs) the binaries for `need`.
 * @returns the bin directory of each needed service.
 * @throws {@link MissingBinaryError} with install lines when something stays missing.
 */
export function ensureBinaries(opts: EnsureOptions): Partial<Record<ServiceName, string>> {
  const progress = opts.progress ?? (() => {});
  const find = () => {
    return Object.fromEntries(opts.need.map((s) => [s, findBinDir(s, opts.dirs)])) as Partial<
      Record<ServiceName, string>
    >;
  };
  let found = find();
  let missing = opts.need.filter((s) => !found[s]);
  if (missing.length > 0 && opts.autoInstall && canApt()) {
    aptInstall(
      missing.map((m) => SPECS[m].apt),
      progress,
    );
    found = find();
    missing = opts.need.filter((s) => !found[s]);
  }
  if (missing.length > 0) throw new MissingBinaryError(missing);
  return found;
}
