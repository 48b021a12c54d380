/**
 * The chaos run's stack, started with the launcher's own code on free loopback ports in a temp
 * folder: Redis (one server, or a cluster of 3 masters with 1 replica each, its nodes restarted
 * when they die as `seckill up` does), PostgreSQL, 2 `seckill serve` and 2 `seckill worker`
 * processes (the CLI from source). Every Redis port the API and workers use is a fault proxy's,
 * so the nemesis can cut or delay the traffic between them and one server.
 */
import type { ChainInfo } from '../../src/draw/chain.js';
import { LocalChain, newLocalChainKey } from '../../src/draw/local-chain.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { loadConfig, NO_RATE_LIMITS } from '../../src/config/index.js';
import { createDb } from '../../src/db/index.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { ensureBinaries, searchDirs } from '../../src/launcher/binaries.js';
import { startPostgres, type RunningPostgres } from '../../src/launcher/postgres-server.js';
import { freePort, freePortRange, isAlive } from '../../src/launcher/process.js';
import { startRedisCluster, type RunningCluster } from '../../src/launcher/redis-cluster.js';
import { startRedisServer, type RunningRedis } from '../../src/launcher/redis-server.js';
import { faultProxy, type FaultProxy } from './fault-proxy.js';
import { signal } from './pause.js';
import { Supervisor, type SelfExit } from './supervisor.js';

const ROOT = join(import.meta.dirname, '..', '..');
export const ADMIN_TOKEN = 'chaos-admin-token-0123456789';
export const WEBHOOK_SECRET = 'chaos-webhook-secret-0123456789abcdef';
/** how long a cluster master may be silent before its replica takes over */
export const NODE_TIMEOUT_MS = 2_000;

export type Topology = 'single' | 'cluster';

export interface ChaosProcess {
  role: 'api' | 'worker';
  n: number;
  port: number;
  url: string;
  child: ChildProcess;
}

export interface RedisNode {
  /** the port the server listens on (the proxy in front of it has another) */
  port: number;
  proxy: FaultProxy;
  pid(): number;
  /** a master's hash slot ranges, as masters() read them (undefined on one Redis) */
  slots?: Array<[number, number]>;
}

export interface ChaosStack {
  topology: Topology;
  /** the draw product's beacon chain (a local one, served by this process) */
  chain: ChainInfo;
  dir: string;
  databaseUrl: string;
  postgres: RunningPostgres;
  nodes: RedisNode[];
  apis: ChaosProcess[];
  workers: ChaosProcess[];
  env: Record<string, string>;
  /** the servers that are masters now (a failover swaps roles), by the cluster's own view */
  masters(): Promise<RedisNode[]>;
  /** SIGKILL, then wait until it is gone */
  kill(p: ChaosProcess): Promise<void>;
  /** starts a killed API or worker again on its port, and waits for its /readyz */
  restart(p: ChaosProcess): Promise<ChaosProcess>;
  /** whether an API or worker is down after an exit of its own (being started again) */
  isRecovering(p: ChaosProcess): boolean;
  /** the API and worker processes that exited by themselves (each was started again) */
  selfExits: readonly SelfExit[];
  /** stops everything; resolves to what is still running after (nothing, when all went well) */
  stop(): Promise<string[]>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function spawnRole(
  role: 'api' | 'worker',
  n: number,
  port: number,
  env: Record<string, string>,
  dir: string,
): ChaosProcess {
  const log = openSync(join(dir, `${role}-${n}.log`), 'a');
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(ROOT, 'src', 'cli.ts'), role === 'api' ? 'serve' : 'worker'],
    {
      cwd: ROOT,
      env: {
        HOME: process.env.HOME ?? '/root',
        PATH: process.env.PATH ?? '',
        ...env,
        ...(role === 'api' ? { PORT: String(port) } : { WORKER_PORT: String(port) }),
      },
      stdio: ['ignore', log, log],
    },
  );
  return { role, n, port, url: `http://127.0.0.1:${port}`, child };
}

async function waitReady(p: ChaosProcess, dir: string, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (p.child.exitCode !== null || p.child.signalCode !== null)
      throw new Error(`${p.role} ${p.n} exited while starting (log: ${dir}/${p.role}-${p.n}.log)`);
    const ok = await fetch(`${p.url}/readyz`, { signal: AbortSignal.timeout(2_000) }).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    await sleep(250);
  }
  throw new Error(
    `${p.role} ${p.n} not ready in ${timeoutMs} ms (log: ${dir}/${p.role}-${p.n}.log)`,
  );
}

export async function startChaosStack(o: {
  topology: Topology;
  durable: boolean;
  dir: string;
  progress: (line: string) => void;
  /** handed the stack's stop at once, so a Ctrl-C during start-up stops what has started */
  onStop?: (stop: () => Promise<string[]>) => void;
}): Promise<ChaosStack> {
  const { dir } = o;
  const bins = ensureBinaries({
    need: ['redis', 'postgres'],
    autoInstall: process.env.AUTO_INSTALL !== 'false',
    dirs: searchDirs(loadConfig(process.env, { AUTH_MODE: 'dev' }).launcher.searchPath),
  });
  const stops: Array<() => Promise<void>> = [];
  const children: ChaosProcess[] = [];
  let single: RunningRedis | undefined;
  let cluster: RunningCluster | undefined;
  const nodes: RedisNode[] = [];
  // every API and worker process ever started (restarts too): stop leaves none behind
  const spawned = new Set<ChildProcess>();
  let stopping = false;
  let pgPid: number | undefined;
  const start = (role: 'api' | 'worker', n: number, port: number, env: Record<string, string>) => {
    if (stopping) throw new Error('the stack is stopping');
    const p = spawnRole(role, n, port, env, dir);
    spawned.add(p.child);
    return p;
  };
  let supervisor: Supervisor<ChaosProcess> | undefined;
  let stopped: Promise<string[]> | undefined;
  const stop = () => (stopped ??= stopAll());
  const stopAll = async () => {
    stopping = true;
    supervisor?.stop();
    for (const n of nodes) signal(n.pid(), 'SIGCONT'); // a paused server must not hold the stop
    await Promise.all(
      [...spawned].map(async (child) => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const gone = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
        await gone;
        clearTimeout(timer);
      }),
    );
    for (const s of stops.reverse()) await s().catch(() => undefined);
    const left = [...spawned].filter((c) => c.exitCode === null && c.signalCode === null);
    const servers = [...nodes.map((n) => n.pid()), ...(pgPid ? [pgPid] : [])].filter(isAlive);
    return [...left.map((c) => `process ${c.pid}`), ...servers.map((pid) => `server ${pid}`)];
  };
  o.onStop?.(stop);
  try {
    mkdirSync(dir, { recursive: true });
    if (o.topology === 'single') {
      single = await startRedisServer({
        port: await freePort(),
        dir: join(dir, 'redis'),
        binDir: bins.redis!,
      });
      const server = single;
      stops.push(() => server.stop());
      const proxy = await faultProxy(server.port);
      stops.push(() => proxy.close());
      nodes.push({ port: server.port, proxy, pid: () => server.process.pid });
    } else {
      // 3 masters + 3 replicas, each announcing its proxy's port: clients (and replication)
      // reach every node through its proxy; the cluster bus is direct, so a cut is a partition
      // between the API and a server, not a failover
      const base = await freePortRange(12);
      const proxies = await Promise.all(Array.from({ length: 6 }, (_, i) => faultProxy(base + i)));
      stops.push(async () => void (await Promise.all(proxies.map((p) => p.close()))));
      o.progress('starting a Redis Cluster: 3 masters, 1 replica each');
      cluster = await startRedisCluster({
        basePort: base,
        shards: 3,
        replicas: 1,
        dir: join(dir, 'redis-cluster'),
        binDir: bins.redis!,
        nodeTimeoutMs: NODE_TIMEOUT_MS,
        announcePort: (port) => proxies[port - base]!.port,
        supervise: {
          onExit: (n) => o.progress(`redis ${n.port} exited; the launcher restarts it`),
          onRestart: (n) => o.progress(`redis ${n.port} restarted (it rejoins as a replica)`),
        },
      });
      const running = cluster;
      stops.push(() => running.stop());
      running.nodes.forEach((n, i) =>
        nodes.push({ port: n.port, proxy: proxies[i]!, pid: () => n.process.pid }),
      );
    }
    o.progress('starting PostgreSQL');
    const postgres = await startPostgres({
      port: await freePort(),
      dir: join(dir, 'pg'),
      binDir: bins.postgres!,
      settings: { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off' },
    });
    stops.push(() => postgres.stop());
    pgPid = postgres.process.pid;
    const db = createDb(postgres.url, { max: 1 });
    await migrateToLatest(db);
    await db.destroy();
    // the draw product's beacon: a local chain of quicknet's scheme, a round a second
    const chain = new LocalChain(newLocalChainKey(1), 'chaos');
    const beacon = await chain.serve(0);
    stops.push(() => new Promise<void>((resolve) => beacon.server.close(() => resolve())));
    const env: Record<string, string> = {
      ...(o.topology === 'single'
        ? { REDIS_URL: nodes[0]!.proxy.url }
        : {
            REDIS_CLUSTER_NODES: nodes
              .slice(0, 3)
              .map((n) => `127.0.0.1:${n.proxy.port}`)
              .join(','),
          }),
      ...(o.topology === 'cluster' && o.durable && { REDIS_WAIT_REPLICAS: '1' }),
      DATABASE_URL: postgres.url,
      HOST: '127.0.0.1',
      AUTH_MODE: 'dev',
      ...NO_RATE_LIMITS,
      ADMIN_TOKEN,
      PAYMENT_WEBHOOK_SECRET: WEBHOOK_SECRET,
      // order events to the run's flaky receiver on loopback (receiver.ts): a schedule of about
      // a minute outlasts its restarts and the faults, so none ends dead-lettered
      WEBHOOK_ALLOW_PRIVATE: 'true',
      WEBHOOK_TIMEOUT_MS: '2000',
      WEBHOOK_RETRY_SCHEDULE: '200ms,500ms,1s,2s,3s,5s,5s,5s,5s,5s,10s,10s',
      EVENT_RELAY_INTERVAL_MS: '200',
      // the waiting-room product's admissions are sale tokens
      SALE_TOKEN_SECRET: 'chaos-sale-token-secret-0123456789abcdef',
      DRAW_CHAIN_INFO: JSON.stringify(chain.info),
      DRAW_BEACON_URLS: beacon.url,
      DRAW_BEACON_MARGIN_MS: '2000',
      LOG_LEVEL: 'info',
      KEY_PREFIX: 'chaos',
      API_PROCESSES: '1',
      SHUTDOWN_TIMEOUT_MS: '5000',
    };
    o.progress('starting 2 API and 2 worker processes');
    for (let n = 0; n < 2; n++) {
      children.push(start('api', n, await freePort(), env));
      children.push(start('worker', n, await freePort(), env));
    }
    for (const p of children) await waitReady(p, dir);
    const byPort = new Map(nodes.map((n) => [n.proxy.port, n]));
    const apis = children.filter((c) => c.role === 'api');
    const workers = children.filter((c) => c.role === 'worker');
    const sup = (supervisor = new Supervisor<ChaosProcess>({
      spawn: (p) => start(p.role, p.n, p.port, env),
      ready: (p) => waitReady(p, dir, 60_000),
      replace: (old, fresh) => {
        for (const list of [children, fresh.role === 'api' ? apis : workers]) {
          const i = list.indexOf(old);
          if (i >= 0) list[i] = fresh;
        }
      },
      progress: o.progress,
    }));
    for (const p of children) sup.watch(p);
    return {
      topology: o.topology,
      chain: chain.info,
      dir,
      databaseUrl: postgres.url,
      postgres,
      nodes,
      env,
      apis,
      workers,
      async masters() {
        if (o.topology === 'single') return nodes;
        // ask each live node; the first answer that lists 3 masters connected wins
        for (const n of nodes) {
          const r = new Redis({
            port: n.port,
            lazyConnect: true,
            connectTimeout: 500,
            commandTimeout: 500,
            maxRetriesPerRequest: 0,
          });
          r.on('error', () => undefined); // a node down or paused: the next is asked
          try {
            await r.connect();
            const text = (await r.call('CLUSTER', 'NODES')) as string;
            // <id> <ip:port@bus> <flags> <master> <ping> <pong> <epoch> <link> <slots...>
            const masters = text
              .trim()
              .split('\n')
              .map((l) => l.split(' '))
              .filter((f) => {
                const flags = f[2]!.split(',');
                const failing = flags.includes('fail') || flags.includes('fail?');
                return flags.includes('master') && !failing && f.length > 8;
              })
              .map((f) => {
                const node = byPort.get(Number(f[1]!.split('@')[0]!.split(':')[1]));
                // "0-5460" or "5461"; "[slot->-id]" (migrating) is not owned yet
                const slots = f
                  .slice(8)
                  .filter((r) => !r.startsWith('['))
                  .map((r) => r.split('-').map(Number))
                  .map(([lo, hi]) => [lo!, hi ?? lo!] as [number, number]);
                return node && ({ ...node, slots } satisfies RedisNode);
              })
              .filter((x): x is RedisNode & { slots: Array<[number, number]> } => !!x);
            if (masters.length > 0) return masters;
          } catch {
            // down or paused: ask the next
          } finally {
            r.disconnect();
          }
        }
        return [];
      },
      kill: (p) => sup.kill(p),
      restart: (p) => sup.restart(p),
      isRecovering: (p) => sup.isRecovering(p),
      selfExits: sup.selfExits,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
