import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { ensureBinaries, MissingBinaryError } from '../../src/launcher/binaries.js';
import { isAlive } from '../../src/launcher/process.js';
import { clusterDir, removeOrphanClusters, runAs } from '../../src/launcher/postgres-server.js';
import { startRedisServer } from '../../src/launcher/redis-server.js';
import { runCli, waitFor, type CliRun } from '../support/cli.js';
import { freePort, freePortRange } from '../support/ports.js';
import { binDirs, startTestPostgres, tempDir } from '../support/servers.js';

const cleanups: Array<() => Promise<unknown> | void> = [];

/** Node processes whose parent is `pid` (the API processes a primary forked). */
function childPids(pid: number): number[] {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      try {
        const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
        // Node 24 names its main thread MainThread (the comm field); earlier ones, node
        return (
          /\((node|MainThread)\) /.test(stat) && stat.split(') ')[1]!.split(' ')[1] === String(pid)
        );
      } catch {
        return false;
      }
    })
    .map(Number);
}
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function redisGet(url: string, key: string) {
  const r = new Redis(url, { lazyConnect: true });
  await r.connect();
  try {
    return await r.get(key);
  } finally {
    r.disconnect();
  }
}

describe('local services', () => {
  it('starts redis-server with AOF and noeviction, stops it, and keeps data across restarts', async () => {
    const dir = tempDir('l-redis');
    cleanups.push(() => dir.remove());
    const port = await freePort();
    const first = await startRedisServer({ port, dir: dir.path, binDir: binDirs().redis });
    cleanups.push(() => first.stop());
    const r = new Redis(first.url);
    expect(await r.config('GET', 'appendonly')).toEqual(['appendonly', 'yes']);
    expect(await r.config('GET', 'maxmemory-policy')).toEqual(['maxmemory-policy', 'noeviction']);
    await r.set('k', 'v');
    r.disconnect();
    await first.stop();
    expect(isAlive(first.process.pid)).toBe(false);

    const second = await startRedisServer({ port, dir: dir.path, binDir: binDirs().redis });
    cleanups.push(() => second.stop());
    expect(await redisGet(second.url, 'k')).toBe('v');
  });

  it('initdb once, reuses the cluster on the next start, and stops cleanly', async () => {
    const dir = tempDir('l-pg');
    cleanups.push(() => dir.remove());
    const cluster = join(dir.path, 'cluster');
    const port = await freePort();
    const first = await startTestPostgres(cluster, port);
    cleanups.push(() => first.stop());
    expect(first.dir).toBe(cluster);
    expect(existsSync(join(cluster, 'PG_VERSION'))).toBe(true);
    const c1 = new pg.Client(first.url);
    await c1.connect();
    await c1.query('create table kept (v text)');
    await c1.query("insert into kept values ('still here')");
    await c1.end();
    await first.stop();
    expect(isAlive(first.process.pid)).toBe(false);

    const second = await startTestPostgres(cluster, port);
    cleanups.push(() => second.stop());
    const c2 = new pg.Client(second.url);
    await c2.connect();
    const { rows } = await c2.query('select v from kept');
    await c2.end();
    expect(rows).toEqual([{ v: 'still here' }]);
  });

  it('stops a server left behind by a killed launcher before starting again', async () => {
    const dir = tempDir('l-stale');
    cleanups.push(() => dir.remove());
    const port = await freePort();
    const orphan = await startRedisServer({ port, dir: dir.path, binDir: binDirs().redis });
    // The launcher "dies" without stopping it; the next start finds it through the pid file.
    const next = await startRedisServer({ port, dir: dir.path, binDir: binDirs().redis });
    cleanups.push(() => next.stop());
    expect(isAlive(orphan.process.pid)).toBe(false);
    expect(next.process.pid).not.toBe(orphan.process.pid);
    expect(await redisGet(next.url, 'anything')).toBeNull();
  });

  it('refuses to adopt a port someone else already serves', async () => {
    const dir = tempDir('l-busy');
    cleanups.push(() => dir.remove());
    const port = await freePort();
    const other = await startRedisServer({
      port,
      dir: join(dir.path, 'a'),
      binDir: binDirs().redis,
    });
    cleanups.push(() => other.stop());
    await expect(
      startRedisServer({ port, dir: join(dir.path, 'b'), binDir: binDirs().redis }),
    ).rejects.toThrow(`port ${port} is already in use`);
  });

  it.skipIf(process.getuid?.() !== 0)(
    'keeps the cluster in a data folder inside a private temp dir (mktemp -d), not in /var/tmp',
    () => {
      const user = runAs()!;
      const outer = mkdtempSync(join(tmpdir(), 'seckill-l-private-')); // 0700, as mktemp -d
      cleanups.push(() => rmSync(outer, { recursive: true, force: true }));
      const cluster = join(outer, 'data', 'postgres');
      expect(clusterDir(cluster, user)).toBe(cluster);
      // others may traverse it now (x), not list it (r)
      expect(statSync(outer).mode & 0o007).toBe(0o001);
    },
  );

  it('removes clusters it moved to /var/tmp once their data folder is gone (and no server runs them)', () => {
    const root = tempDir('l-alt');
    cleanups.push(() => root.remove());
    const make = (name: string, owner: string | undefined, pid?: number) => {
      const alt = join(root.path, `seckill-pg-${name}`);
      mkdirSync(alt);
      writeFileSync(`${alt}.log`, 'log');
      if (owner !== undefined) writeFileSync(`${alt}.owner`, `${owner}\n`);
      if (pid) writeFileSync(join(alt, 'postmaster.pid'), `${pid}\n`);
      return alt;
    };
    const gone = make('gone', join(root.path, 'no-such-data-dir'));
    const kept = make('kept', root.path);
    const legacy = make('legacy', undefined);
    const running = make('running', join(root.path, 'also-gone'), process.pid);
    expect(removeOrphanClusters(root.path)).toEqual([gone]);
    expect(existsSync(gone) || existsSync(`${gone}.log`) || existsSync(`${gone}.owner`)).toBe(
      false,
    );
    for (const alt of [kept, legacy, running]) expect(existsSync(alt)).toBe(true);
  });

  it('names the exact install lines for apt, brew and Docker when a binary is missing', () => {
    let err: unknown;
    try {
      ensureBinaries({ need: ['redis', 'postgres'], autoInstall: false, dirs: ['/nonexistent'] });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(MissingBinaryError);
    const lines = (err as Error).message.split('\n');
    expect(lines).toContain('  apt:    sudo apt-get install -y redis-server postgresql');
    expect(lines).toContain('  brew:   brew install redis postgresql@16');
    expect(lines).toContainEqual(expect.stringMatching(/^ {2}Docker: docker compose up -d redis /));
    expect(lines).toContainEqual(
      expect.stringMatching(/^ {2}Docker: docker compose up -d postgres /),
    );
  });
});

describe('seckill up (the README first command)', () => {
  /** Spawns `seckill up` on a free API port (Ctrl-C'd after the test if still running). */
  async function spawnUp(
    env: Record<string, string>,
  ): Promise<CliRun & { base: string; storefront: string }> {
    const port = await freePort();
    const shopPort = await freePort();
    const run = runCli(['up'], {
      LOG_LEVEL: 'warn',
      PORT: String(port),
      STOREFRONT_PORT: String(shopPort),
      ...env,
    });
    cleanups.push(async () => {
      if (run.child.exitCode === null) {
        run.child.kill('SIGINT');
        await run.exited;
      }
    });
    return { ...run, base: `http://127.0.0.1:${port}`, storefront: `http://127.0.0.1:${shopPort}` };
  }

  /** `seckill up`, once /readyz answers 200. */
  async function up(
    env: Record<string, string>,
  ): Promise<CliRun & { base: string; storefront: string }> {
    const run = await spawnUp(env);
    const { base } = run;
    await waitFor(
      () => `readyz 200 (output so far:\n${run.output()})`,
      async () => (await fetch(`${base}/readyz`)).status === 200,
      60_000,
    );
    return run;
  }

  it('brings the stack up, stops everything on SIGINT, and works again on the same data folder', async () => {
    const dir = tempDir('l-up');
    cleanups.push(() => dir.remove());
    const env = {
      DATA_DIR: dir.path,
      LOCAL_REDIS_PORT: String(await freePort()),
      LOCAL_PG_PORT: String(await freePort()),
      PATH: process.env.PATH ?? '',
      AUTO_INSTALL: 'false',
    };
    const secrets: string[] = [];
    for (const round of [1, 2]) {
      const run = await up(env);
      const redisPid = Number(readFileSync(join(dir.path, 'redis', 'redis.pid'), 'utf8'));
      const pgPid = Number(
        readFileSync(join(dir.path, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0],
      );
      expect(isAlive(redisPid)).toBe(true);
      expect(isAlive(pgPid)).toBe(true);
      expect(run.output()).toContain(round === 1 ? 'initdb' : 'redis-server up');
      if (round === 2) expect(run.output()).not.toContain('initdb');
      // the demo sale is there to buy from; on the second round it kept its sales
      const bought = await fetch(`${run.base}/seckill`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-user-id': 'alice' },
        body: JSON.stringify({ productId: 'demo' }),
      });
      expect(bought.status).toBe(round === 1 ? 202 : 409);
      // the payment webhook is on (up keeps a secret in the data folder, the same each round):
      // an unsigned notification is refused for its signature, not 503 webhook-disabled
      const secret = readFileSync(join(dir.path, 'payment-webhook-secret'), 'utf8').trim();
      expect(secret.length).toBeGreaterThanOrEqual(32);
      if (round === 1) secrets.push(secret);
      else expect(secret).toBe(secrets[0]);
      const unsigned = await fetch(`${run.base}/payments/webhook`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ paymentIntentId: 'pi-x', status: 'succeeded' }),
      });
      expect(unsigned.status).toBe(401);
      // a waiting room needs nothing set either: up keeps a sale-token secret the same way
      const saleSecret = readFileSync(join(dir.path, 'sale-token-secret'), 'utf8').trim();
      expect(saleSecret.length).toBeGreaterThanOrEqual(32);
      if (round === 1) secrets.push(saleSecret);
      else expect(saleSecret).toBe(secrets[1]);
      // a waiting-room product, seeded through the admin API with up's own admin token
      const seedRoom = (id: string, extra: object = {}) =>
        fetch(`${run.base}/admin/products/${id}`, {
          method: 'PUT',
          headers: {
            authorization: `Bearer ${readFileSync(join(dir.path, 'admin-token'), 'utf8').trim()}`,
            'content-type': 'application/json',
          },
          body: JSON.stringify({
            strategy: 'global',
            total: 1,
            waitingRoom: { admitPerSecond: 10, maxActive: 10, admittedForSeconds: 60 },
            ...extra,
          }),
        });
      const room = await seedRoom(`room-${round}`);
      expect(room.status, await room.clone().text()).toBe(201);
      const joined = await fetch(`${run.base}/products/room-${round}/queue`, {
        method: 'POST',
        headers: { 'x-user-id': 'alice' },
      });
      expect(joined.status).toBe(200);
      // nor the built-in door: a product seeded with a proof of work asks one, with up's own key
      const powKey = readFileSync(join(dir.path, 'challenge-pow-secret'), 'utf8').trim();
      expect(powKey.length).toBeGreaterThanOrEqual(32);
      if (round === 1) secrets.push(powKey);
      else expect(powKey).toBe(secrets[2]);
      const door = await seedRoom(`door-${round}`, { challenge: { kind: 'pow' } });
      expect(door.status, await door.clone().text()).toBe(201);
      const asked = await fetch(`${run.base}/products/door-${round}/challenge`, {
        headers: { 'x-user-id': 'alice' },
      });
      expect(asked.status).toBe(200);
      // the storefront example on its own origin, which the API allows, opening on the demo drop
      const shop = await fetch(`${run.storefront}/storefront-config.json`);
      expect(await shop.json()).toEqual({ api: run.base, productId: 'demo-room' });
      const preflight = await fetch(`${run.base}/products/demo-room/queue`, {
        method: 'OPTIONS',
        headers: { origin: run.storefront, 'access-control-request-method': 'POST' },
      });
      expect(preflight.headers.get('access-control-allow-origin')).toBe(run.storefront);
      const drop = (await (await fetch(`${run.base}/products/demo-room`)).json()) as {
        payWithinSeconds: number;
      };
      expect(drop.payWithinSeconds).toBe(300);

      run.child.kill('SIGINT');
      expect(await run.exited).toBe(0);
      expect(isAlive(run.child.pid!)).toBe(false);
      expect(isAlive(redisPid)).toBe(false);
      expect(isAlive(pgPid)).toBe(false);
    }
  });

  it('LOCAL_REDIS_SHARDS=3 API_PROCESSES=2: a sale over three shards served by two processes sells exactly, persists, reconciles, merges /metrics, and Ctrl-C stops everything', async () => {
    const dir = tempDir('l-scale');
    cleanups.push(() => dir.remove());
    const run = await up({
      DATA_DIR: dir.path,
      LOCAL_REDIS_PORT: String(await freePortRange(6)),
      LOCAL_PG_PORT: String(await freePort()),
      LOCAL_REDIS_SHARDS: '3',
      API_PROCESSES: '2',
      DEMO_STOCK: '40',
      PATH: process.env.PATH ?? '',
      AUTO_INSTALL: 'false',
    });
    const apiPids = childPids(run.child.pid!);
    expect(apiPids).toHaveLength(2);
    const nodePids = [0, 1, 2].map((i) => {
      const port = Number(run.output().match(/on ports (\d+)-/)![1]) + i;
      return Number(
        readFileSync(join(dir.path, 'redis-cluster', `node-${port}`, 'redis.pid'), 'utf8'),
      );
    });
    const admin = {
      authorization: `Bearer ${readFileSync(join(dir.path, 'admin-token'), 'utf8').trim()}`,
    };
    const product = (await (
      await fetch(`${run.base}/admin/products/demo`, { headers: admin })
    ).json()) as {
      segments: Array<{ shard: string }>;
    };
    expect(new Set(product.segments.map((s) => s.shard)).size).toBe(3);

    // 80 buyers at once on 40 units: a buyer whose segment lock was busy past LOCK_WAIT_MS gets
    // 503 lock-timeout with Retry-After (what a loaded machine once showed as "39 of 40 got 409"):
    // each buyer retries after it, as a client does, until a final answer
    let requests = 0;
    const transient: string[] = [];
    const statuses = await Promise.all(
      Array.from({ length: 80 }, async (_, i) => {
        for (let attempt = 0; attempt < 30; attempt++) {
          requests++;
          const res = await fetch(`${run.base}/seckill`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-user-id': `u${i}` },
            body: JSON.stringify({ productId: 'demo' }),
          });
          const body = (await res.json()) as { type?: string };
          if (res.status !== 503) return `${res.status}`;
          transient.push(
            `${res.status} ${body.type} retry-after ${res.headers.get('retry-after')}`,
          );
          expect(res.headers.get('retry-after'), transient.at(-1)).toMatch(/^\d+$/);
          // the scenario: a client honouring Retry-After
          await new Promise((r) => setTimeout(r, Number(res.headers.get('retry-after')) * 1_000));
        }
        return 'no final answer after 30 tries';
      }),
    );
    const finals: Record<string, number> = {};
    for (const s of statuses) finals[s] = (finals[s] ?? 0) + 1;
    expect(finals, `transient answers: ${JSON.stringify(transient)}`).toEqual({
      '202': 40,
      '409': 40,
    });
    for (const t of transient)
      expect(t).toMatch(/^503 urn:seckill:problem:(lock-timeout|overloaded)/);
    // both processes' counts, merged: every purchase counted once
    const metrics = await (await fetch(`${run.base}/metrics`)).text();
    const purchases = [
      ...metrics.matchAll(/^http_requests_total\{[^}]*route="\/seckill"[^}]*\} (\d+)/gm),
    ];
    expect(purchases.reduce((n, m) => n + Number(m[1]), 0)).toBe(requests);
    const report = await waitFor(
      'every order persisted and reconciled',
      async () => {
        const r = (await (
          await fetch(`${run.base}/admin/products/demo/reconcile`, {
            method: 'POST',
            headers: admin,
          })
        ).json()) as { ok: boolean; persisted: number };
        return r.ok && r.persisted === 40 ? r : undefined;
      },
      30_000,
    );
    expect(report).toMatchObject({ remaining: 0, pending: 0, persistedOrders: 40 });
    // a second terminal's CLI, nothing set but the data folder: it finds the running cluster
    const second = runCli(['reconcile', 'demo'], { DATA_DIR: dir.path });
    expect(await second.exited, second.output()).toBe(0);
    expect(second.stdout()).toContain('OK: every unit is accounted for');
    expect(second.stdout()).toMatch(/"remaining":0,.*"persistedOrders":40/);

    // a node that dies is restarted by the launcher (as a supervisor would), the stack stays up
    const firstPort = Number(run.output().match(/on ports (\d+)-/)![1]);
    const pidFile = join(dir.path, 'redis-cluster', `node-${firstPort + 1}`, 'redis.pid');
    process.kill(nodePids[1]!, 'SIGKILL');
    const restarted = await waitFor(
      () => `the node on ${firstPort + 1} restarted (output:\n${run.output()})`,
      async () => {
        const pid = Number(readFileSync(pidFile, 'utf8'));
        return pid !== nodePids[1] && isAlive(pid) && run.output().includes('was restarted') && pid;
      },
      30_000,
    );
    expect(run.output()).toContain('a Redis Cluster node exited');
    expect((await fetch(`${run.base}/healthz`)).status).toBe(200);

    run.child.kill('SIGINT');
    expect(await run.exited).toBe(0);
    expect(existsSync(join(dir.path, 'stack.json'))).toBe(false);
    for (const pid of [...apiPids, ...nodePids, restarted])
      expect(isAlive(pid), `pid ${pid}`).toBe(false);
  });

  it('a second up on the same DATA_DIR refuses at once and leaves the first running; SIGHUP stops the first like Ctrl-C', async () => {
    const dir = tempDir('l-lock');
    cleanups.push(() => dir.remove());
    const env = {
      DATA_DIR: dir.path,
      LOCAL_REDIS_PORT: String(await freePort()),
      LOCAL_PG_PORT: String(await freePort()),
      PATH: process.env.PATH ?? '',
      AUTO_INSTALL: 'false',
    };
    const first = await up(env);
    const redisPid = Number(readFileSync(join(dir.path, 'redis', 'redis.pid'), 'utf8'));
    const pgPid = Number(
      readFileSync(join(dir.path, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0],
    );
    const second = await spawnUp(env);
    expect(await second.exited).toBe(1);
    expect(second.output()).toMatch(
      new RegExp(
        `DATA_DIR ${dir.path} is in use by another seckill up \\(pid ${first.child.pid}\\)`,
      ),
    );
    expect(second.output()).not.toMatch(/\n\s+at /); // no stack
    expect((await fetch(`${first.base}/readyz`)).status).toBe(200);
    expect(isAlive(pgPid) && isAlive(redisPid)).toBe(true);

    first.child.kill('SIGHUP');
    expect(await first.exited).toBe(0);
    expect(isAlive(redisPid)).toBe(false);
    expect(isAlive(pgPid)).toBe(false);
    expect(existsSync(join(dir.path, 'up.lock'))).toBe(false);
  });

  it.each(['stdout', 'stderr'] as const)(
    'a closed %s pipe stops it like Ctrl-C, nothing left running',
    async (which) => {
      const dir = tempDir('l-pipe');
      cleanups.push(() => dir.remove());
      const run = await spawnUp({
        DATA_DIR: dir.path,
        LOCAL_REDIS_PORT: String(await freePort()),
        LOCAL_PG_PORT: String(await freePort()),
        PATH: process.env.PATH ?? '',
        AUTO_INSTALL: 'false',
        // logs (stdout) are written at start-up too
        LOG_LEVEL: 'info',
      });
      // `up | head -1` (stdout) or `up 2>&1 >/dev/null | head -1` (stderr): the reader goes away
      await waitFor('a first line', async () => run.output().length > 0, 30_000);
      run.child[which]!.destroy();
      const code = await Promise.race([
        run.exited,
        new Promise<'hung'>((r) => setTimeout(() => r('hung'), 60_000)),
      ]);
      expect(code).not.toBe('hung');
      await waitFor('its lock gone', async () => !existsSync(join(dir.path, 'up.lock')), 10_000);
      const redisPid = join(dir.path, 'redis', 'redis.pid');
      // the server is told to stop; it may still be on its way out a moment after `up` is gone
      if (existsSync(redisPid)) {
        const pid = Number(readFileSync(redisPid, 'utf8'));
        await waitFor(`redis-server ${pid} gone`, async () => !isAlive(pid), 15_000);
      }
      expect(existsSync(join(dir.path, 'postgres', 'postmaster.pid'))).toBe(false);
    },
  );

  it.each([
    [
      'PORT',
      (port: number) =>
        `seckill: PORT ${port} is already in use on 127.0.0.1: stop what listens there, or set PORT to a free port`,
      ['redis', 'postgres'],
    ],
    [
      'LOCAL_REDIS_PORT',
      (port: number) =>
        `seckill: LOCAL_REDIS_PORT ${port}: port ${port} is already in use: stop what listens there, or set LOCAL_REDIS_PORT to a free port`,
      ['postgres'],
    ],
  ] as const)(
    'a busy %s is refused in plain words naming it, before the servers after it start',
    async (variable, said, notStarted) => {
      const dir = tempDir('l-port');
      cleanups.push(() => dir.remove());
      const { createServer } = await import('node:net');
      const squatter = createServer().listen(0, '127.0.0.1');
      await new Promise((r) => squatter.once('listening', r));
      const port = (squatter.address() as { port: number }).port;
      try {
        const run = runCli(['up'], {
          LOG_LEVEL: 'warn',
          PORT: String(await freePort()),
          DATA_DIR: dir.path,
          LOCAL_REDIS_PORT: String(await freePort()),
          LOCAL_PG_PORT: String(await freePort()),
          PATH: process.env.PATH ?? '',
          AUTO_INSTALL: 'false',
          [variable]: String(port),
        });
        expect(await run.exited).toBe(1);
        expect(run.stderr().trimEnd().split('\n').at(-1)).toBe(said(port));
        if (variable === 'PORT') expect(run.output().trim()).toBe(said(port));
        for (const server of notStarted) expect(existsSync(join(dir.path, server))).toBe(false);
      } finally {
        squatter.close();
      }
    },
  );

  it('exits non-zero within a bound, its servers stopped, when its redis-server is killed -9', async () => {
    const dir = tempDir('l-crash');
    cleanups.push(() => dir.remove());
    const run = await up({
      DATA_DIR: dir.path,
      LOCAL_REDIS_PORT: String(await freePort()),
      LOCAL_PG_PORT: String(await freePort()),
      PATH: process.env.PATH ?? '',
      AUTO_INSTALL: 'false',
      SHUTDOWN_TIMEOUT_MS: '5000',
    });
    const redisPid = Number(readFileSync(join(dir.path, 'redis', 'redis.pid'), 'utf8'));
    const pgPid = Number(
      readFileSync(join(dir.path, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0],
    );
    process.kill(redisPid, 'SIGKILL');
    const code = await Promise.race([
      run.exited,
      new Promise<'hung'>((r) => setTimeout(() => r('hung'), 25_000)),
    ]);
    expect(code, run.output()).not.toBe('hung');
    expect(code).not.toBe(0);
    expect(isAlive(pgPid)).toBe(false);
    // one plain [seckill] line among the launcher's others, not a JSON record
    expect(run.stderr()).toMatch(
      /^\[seckill\] a local server exited unexpectedly: redis-server \(exit .+; log .+\); stopping everything$/m,
    );
    expect(run.stdout()).not.toContain('exited unexpectedly');
  });

  it('uses REDIS_URL / DATABASE_URL when set and starts nothing', async () => {
    const dir = tempDir('l-ext');
    cleanups.push(() => dir.remove());
    const redis = await startRedisServer({
      port: await freePort(),
      dir: join(dir.path, 'r'),
      binDir: binDirs().redis,
    });
    cleanups.push(() => redis.stop());
    const postgres = await startTestPostgres(join(dir.path, 'pg'));
    cleanups.push(() => postgres.stop());
    const run = await up({
      DATA_DIR: join(dir.path, 'data'),
      REDIS_URL: redis.url,
      DATABASE_URL: postgres.url,
    });
    expect(run.output()).toContain('starting none');
    expect(existsSync(join(dir.path, 'data', 'redis'))).toBe(false);
    expect(existsSync(join(dir.path, 'data', 'postgres'))).toBe(false);
    run.child.kill('SIGTERM');
    expect(await run.exited).toBe(0);
  });

  it('with a REDIS_URL that does not answer, serves /healthz and a 503 /readyz naming Redis, then starts the rest when Redis comes', async () => {
    const dir = tempDir('l-late');
    cleanups.push(() => dir.remove());
    const postgres = await startTestPostgres(join(dir.path, 'pg'));
    cleanups.push(() => postgres.stop());
    const redisPort = await freePort();
    const run = await spawnUp({
      DATA_DIR: join(dir.path, 'data'),
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
      DATABASE_URL: postgres.url,
    });
    const { base } = run;
    await waitFor(
      () => `healthz 200 (output so far:\n${run.output()})`,
      async () => (await fetch(`${base}/healthz`).catch(() => null))?.status === 200,
      30_000,
    );
    for (let i = 0; i < 3; i++) {
      const ready = await fetch(`${base}/readyz`);
      expect(ready.status).toBe(503);
      expect(ready.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      const body = (await ready.json()) as { checks: unknown; detail: string };
      expect(body.checks).toEqual({ redis: 'down', postgres: 'up' });
      expect(body.detail).toMatch(/^redis: unreachable \(.*ECONNREFUSED/);
    }
    expect(run.output()).toContain(`Redis at redis://127.0.0.1:${redisPort} does not answer`);
    expect(run.output()).not.toContain('ready: ');

    const redis = await startRedisServer({
      port: redisPort,
      dir: join(dir.path, 'r'),
      binDir: binDirs().redis,
    });
    cleanups.push(() => redis.stop());
    await waitFor(
      () => `ready line (output so far:\n${run.output()})`,
      async () => run.output().includes('ready: '),
      30_000,
    );
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    expect(run.output()).toContain('seeded demo sale "demo"');
    const bought = await fetch(`${base}/seckill`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-user-id': 'late' },
      body: JSON.stringify({ productId: 'demo' }),
    });
    expect(bought.status).toBe(202);
    const { orderId } = (await bought.json()) as { orderId: string };
    // the worker started too: the order reaches PostgreSQL
    await waitFor(
      'order persisted',
      async () =>
        (
          (await (
            await fetch(`${base}/orders/${orderId}`, { headers: { 'x-user-id': 'late' } })
          ).json()) as {
            status: string;
          }
        ).status === 'persisted',
      15_000,
    );
    run.child.kill('SIGINT');
    expect(await run.exited).toBe(0);
  });

  it('exits non-zero with install lines when a binary is missing and installing is off', async () => {
    const dir = tempDir('l-miss');
    cleanups.push(() => dir.remove());
    // redis-server is only found through PATH (Debian's PostgreSQL folders are searched too).
    const run = runCli(['up'], { DATA_DIR: dir.path, PATH: '/nonexistent', AUTO_INSTALL: 'false' });
    expect(await run.exited).toBe(1);
    expect(run.output()).toContain('Not found: redis-server.');
    expect(run.output()).toContain('  apt:    sudo apt-get install -y redis-server\n');
    expect(run.output()).toContain('  brew:   brew install redis\n');
    expect(run.output()).not.toMatch(/^\s+at /m);
  });
});

describe('seckill with a bad environment', () => {
  it('exits non-zero with a one-screen message naming the variable, no stack trace', async () => {
    const run = runCli(['serve'], { PORT: 'abc', AUTH_MODE: 'dev' });
    expect(await run.exited).toBe(2);
    const out = run.output();
    expect(out).toMatch(/^Invalid configuration:\n {2}- PORT: .*"abc"/);
    expect(out.trimEnd().split('\n').length).toBeLessThanOrEqual(24);
    expect(out).not.toMatch(/^\s+at /m);
  });

  it('lists every bad variable in that one message', async () => {
    const run = runCli(['serve'], { PORT: '-1', LOG_LEVEL: 'chatty', AUTH_MODE: 'jwt' });
    expect(await run.exited).toBe(2);
    for (const name of ['PORT', 'LOG_LEVEL', 'JWT_SECRET'])
      expect(run.output()).toContain(`- ${name}:`);
  });

  it('rejects an unknown command with usage', async () => {
    const run = runCli(['frobnicate'], {});
    expect(await run.exited).toBe(2);
    expect(run.output()).toContain('Usage: seckill <command>');
  });

  it('prints each command its own help, and refuses unknown flags and wrong arguments with exit 2, no stack', async () => {
    const help = runCli(['seed', '--help'], {});
    expect(await help.exited).toBe(0);
    expect(help.output()).toMatch(/^Usage: seckill seed <product> --total N/);
    expect(help.output()).not.toContain('reconcile');
    const cases: Array<[string[], RegExp]> = [
      [['seed', 'p1', '--total', '5', '--bogus'], /^seckill: seed: Unknown option '--bogus'\n/],
      [['seed', 'p1', '--total'], /^seckill: seed: Option '--total <value>' argument missing/],
      [['seed'], /^seckill: seed takes <product> \(got none\)/],
      [['reconcile', 'a', 'b'], /^seckill: reconcile takes <product> \(got a b\)/],
      [['migrate', 'now'], /^seckill: migrate takes no arguments \(got now\)/],
      [['worker', '--verbose'], /^seckill: worker: Unknown option '--verbose'/],
    ];
    for (const [args, message] of cases) {
      const run = runCli(args, {});
      expect(await run.exited, args.join(' ')).toBe(2);
      expect(run.output()).toMatch(message);
      expect(run.output()).toContain(`Usage: seckill ${args[0]}`);
      expect(run.output()).not.toMatch(/\n\s+at /);
    }
    const invalid = runCli(['seed', 'p1', '--total=-3', '--pay-within', '0'], {});
    expect(await invalid.exited).toBe(2);
    expect(invalid.output()).toContain('--total:');
    expect(invalid.output()).toContain('--pay-within:');
  });
});
