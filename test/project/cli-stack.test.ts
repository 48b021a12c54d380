/**
 * The CLI in a second terminal beside a running stack on a Redis Cluster: it finds
 * the stack through DATA_DIR/stack.json as `up` writes it, and a plain Redis URL that lands on a
 * cluster node ends with one line naming what to set, not "MOVED ..." or "EXECABORT ...".
 * (test/project/launcher.test.ts runs the same second terminal beside a real `LOCAL_REDIS_SHARDS=3 up`.)
 */
import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Cluster } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { runningStackDefaults, STACK_FILE, writeStackFile } from '../../src/launcher/stack-file.js';
import { runCli, type CliRun } from '../support/cli.js';
import { startTestCluster, type TestCluster } from '../support/cluster.js';
import { useNamespace } from '../support/namespace.js';
import { freePort } from '../support/ports.js';
import { tempDir } from '../support/servers.js';

const ns = useNamespace();
let cluster: TestCluster;
let firstPort: number;
const dirs: Array<ReturnType<typeof tempDir>> = [];
const running: CliRun[] = [];

beforeAll(async () => {
  cluster = await startTestCluster();
  firstPort = cluster.masters[0]!.port;
}, 60_000);
afterAll(async () => {
  await cluster?.remove();
});
afterEach(async () => {
  for (const run of running.splice(0)) {
    if (run.child.exitCode === null) run.child.kill('SIGTERM');
    await run.exited;
  }
  for (const dir of dirs.splice(0)) dir.remove();
});

async function cli(args: string[], env: Record<string, string>) {
  const run = runCli(args, env);
  running.push(run);
  const code = await run.exited;
  return { code, err: run.stderr(), out: run.stdout() };
}

const dataDir = () => {
  const dir = tempDir('cli-stack');
  dirs.push(dir);
  return dir.path;
};

/** What `up` on this cluster writes (LOCAL_REDIS_* as the launcher ran it; this file's database). */
function upWrote(dir: string): () => void {
  const env = {
    DATA_DIR: dir,
    LOCAL_REDIS_PORT: String(firstPort),
    LOCAL_REDIS_SHARDS: '3',
    DATABASE_URL: ns.databaseUrl,
    KEY_PREFIX: ns.id,
  };
  return writeStackFile(loadConfig({ ...env, AUTH_MODE: 'dev' }), env);
}

describe('the CLI beside a running stack', () => {
  it('reaches the running cluster with nothing set but DATA_DIR: seed, then reconcile', async () => {
    const dir = dataDir();
    const remove = upWrote(dir);
    const product = `${ns.id}-c`;
    const seeded = await cli(['seed', product, '--total', '9', '--segments', '3'], {
      DATA_DIR: dir,
    });
    expect(seeded.err).toBe('');
    expect(seeded.code).toBe(0);
    // the segments are on the cluster, under the stack's KEY_PREFIX
    const keys = await Promise.all(
      cluster.masters.map((m) => cluster.admin(m.port).keys(`${ns.id}*`)),
    );
    expect(keys.flat().length).toBeGreaterThan(0);
    const report = await cli(['reconcile', product], { DATA_DIR: dir });
    expect(report.err).toBe('');
    expect(report.code).toBe(0);
    expect(report.out).toContain('OK: every unit is accounted for');
    expect(JSON.parse(report.out.trimEnd().split('\n').at(-1)!)).toMatchObject({
      total: 9,
      remaining: 9,
      ok: true,
    });
    remove();
    expect(existsSync(join(dir, STACK_FILE))).toBe(false);
  });

  it('takes a group of variables from the file only when the environment sets none of it', () => {
    const dir = dataDir();
    upWrote(dir);
    expect(runningStackDefaults(dir, {})).toEqual({
      LOCAL_REDIS_PORT: String(firstPort),
      LOCAL_REDIS_SHARDS: '3',
      LOCAL_REDIS_REPLICAS: '0',
      DATABASE_URL: ns.databaseUrl,
      KEY_PREFIX: ns.id,
      QUEUE_PREFIX: '{skq}',
    });
    // a Redis of its own (any variable of the group): the file's Redis part is left out whole
    expect(runningStackDefaults(dir, { LOCAL_REDIS_PORT: '7000', KEY_PREFIX: '' })).toEqual({
      DATABASE_URL: ns.databaseUrl,
      KEY_PREFIX: ns.id,
      QUEUE_PREFIX: '{skq}',
    });
  });

  it('gives the sale-token secret up keeps, unless the environment has one (seed --admit-per-second in a second terminal)', () => {
    const dir = dataDir();
    upWrote(dir);
    writeFileSync(join(dir, 'sale-token-secret'), 'kept-by-up-0123456789-0123456789-01\n');
    expect(runningStackDefaults(dir, {}).SALE_TOKEN_SECRET).toBe(
      'kept-by-up-0123456789-0123456789-01',
    );
    expect(runningStackDefaults(dir, { SALE_TOKEN_SECRET: 'mine' }).SALE_TOKEN_SECRET).toBe(
      undefined,
    ); // and the proof-of-work key the same way (seed --challenge pow in a second terminal)
    writeFileSync(join(dir, 'challenge-pow-secret'), 'kept-pow-key-0123456789\n');
    expect(runningStackDefaults(dir, {}).CHALLENGE_POW_SECRET).toBe('kept-pow-key-0123456789');
    expect(runningStackDefaults(dir, { CHALLENGE_POW_SECRET: 'mine' }).CHALLENGE_POW_SECRET).toBe(
      undefined,
    );
  });

  it('ignores a file left by an up that is gone (killed -9)', () => {
    const dir = dataDir();
    const gone = spawnSync(process.execPath, ['-e', '0']).pid!;
    writeFileSync(
      join(dir, STACK_FILE),
      JSON.stringify({ pid: gone, env: { LOCAL_REDIS_SHARDS: '3' } }),
    );
    expect(runningStackDefaults(dir, {})).toEqual({});
  });

  it('LOCAL_REDIS_PORT on a cluster node, LOCAL_REDIS_SHARDS unset: reached as a cluster (issue 46); a REDIS_URL there: one line naming what to set, exit 1', async () => {
    // the product is seeded on the cluster; the command finds it through the one node it is given
    const seeded = await cli(['seed', 'lp1', '--total', '7'], {
      DATA_DIR: dataDir(),
      LOCAL_REDIS_PORT: String(firstPort),
      DATABASE_URL: ns.databaseUrl,
      KEY_PREFIX: ns.id,
    });
    expect(seeded.err).toBe('');
    expect(seeded.code).toBe(0);
    const probe = new Cluster(cluster.masters);
    try {
      expect(await probe.exists(`${ns.id}:{lp1}:meta`)).toBe(1);
    } finally {
      probe.disconnect();
    }
    const given = await cli(['reconcile', 'p'], {
      DATA_DIR: dataDir(),
      REDIS_URL: `redis://127.0.0.1:${firstPort}`,
      LOCAL_PG_PORT: String(await freePort()),
    });
    expect(given.code).toBe(1);
    expect(given.err).toMatch(
      new RegExp(`set REDIS_CLUSTER_NODES=127\\.0\\.0\\.1:${firstPort} instead of REDIS_URL `),
    );
  });
});
