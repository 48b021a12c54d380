/**
 * A real local Redis Cluster: `shards` masters, each with `replicas` replicas, on consecutive
 * ports from `basePort` (masters first), with the cluster bus ports right after them (set with
 * `cluster-port`, so any base port works, not only those below 55536). Each node keeps its data
 * and nodes.conf under `dir/node-<port>`; a later start reuses them and the cluster they form.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { assertPortFree, LaunchError, stopStale, type ServiceProcess } from './process.js';
import { startRedisServer, type RunningRedis } from './redis-server.js';

export interface RedisClusterOptions {
  basePort: number;
  shards: number;
  replicas: number;
  dir: string;
  binDir: string;
  persistence?: 'aof' | 'none';
  /** how long a master may be silent before its replica takes over (default 2 000 ms) */
  nodeTimeoutMs?: number;
  progress?: (line: string) => void;
  /** extra arguments for every node (tests enable DEBUG this way) */
  extraArgs?: string[];
  /** restart a node that exits unasked, as a supervisor would (`seckill up` does) */
  supervise?: NodeSupervision;
  /**
   * The port a node tells clients and its replicas to use, when something stands in front of
   * it (the chaos run's fault proxies); default its own. The cluster bus stays direct.
   */
  announcePort?: (port: number) => number;
}

export interface NodeSupervision {
  /**
   * Wait before a restart. Default: with replicas, twice the node timeout, so the replica has
   * taken over and the node rejoins as its replica (the shard has a replica again, which durable
   * mode needs); without, 1 s (nothing else serves its slots).
   */
  restartDelayMs?: number;
  onExit?(node: ClusterNode, code: number | string, restartInMs: number): void;
  onRestart?(node: ClusterNode): void;
  onRestartFailed?(node: ClusterNode, err: unknown): void;
}

/** A node that dies again this soon after a restart waits twice as long next time (up to 30 s). */
const CRASH_LOOP_MS = 30_000;
const MAX_RESTART_DELAY_MS = 30_000;

export interface ClusterNode extends RunningRedis {
  /** the role it was given when the cluster formed (a failover may have swapped it since) */
  role: 'master' | 'replica';
  busPort: number;
  /** starts it again after it stopped or was killed: same port, data and node id */
  restart(): Promise<void>;
}

export interface RunningCluster {
  nodes: ClusterNode[];
  /** the masters' addresses: the seed nodes clients are given */
  masters: Array<{ host: string; port: number }>;
  stop(): Promise<void>;
}

/** Layout of the cluster a data folder holds; a start with another layout is refused. */
interface Layout {
  basePort: number;
  shards: number;
  replicas: number;
}

export const SLOTS = 16_384;

/** The slot range [from, to] master `i` of `shards` serves: an even split. */
export function slotRange(index: number, shards: number): [number, number] {
  return [Math.floor((index * SLOTS) / shards), Math.floor(((index + 1) * SLOTS) / shards) - 1];
}

export async function startRedisCluster(opts: RedisClusterOptions): Promise<RunningCluster> {
  if (opts.shards < 3) throw new Error('a Redis Cluster needs at least 3 masters');
  const layout: Layout = { basePort: opts.basePort, shards: opts.shards, replicas: opts.replicas };
  mkdirSync(opts.dir, { recursive: true });
  checkLayout(opts.dir, layout);
  const total = opts.shards * (1 + opts.replicas);
  const nodeTimeout = opts.nodeTimeoutMs ?? 2_000;
  const nodes: ClusterNode[] = [];
  let closing = false;
  const stop = async () => {
    closing = true;
    await Promise.all(nodes.map((n) => n.stop()));
  };
  const baseDelay = opts.supervise?.restartDelayMs ?? (opts.replicas > 0 ? 2 * nodeTimeout : 1_000);
  try {
    for (let i = 0; i < total; i++) {
      // a node left running by a launcher that was killed holds its bus port: stop it first
      const port = opts.basePort + i;
      await stopStale(join(opts.dir, `node-${port}`, 'redis.pid'), 'redis-server', 'SIGTERM');
      await assertPortFree(opts.basePort + total + i);
    }
    // every start settles before one that failed is thrown: the others are then stopped with it
    const settled = await Promise.allSettled(
      Array.from({ length: total }, async (_, i) => {
        const port = opts.basePort + i;
        const busPort = opts.basePort + total + i;
        const start = () =>
          startRedisServer({
            port,
            dir: join(opts.dir, `node-${port}`),
            binDir: opts.binDir,
            persistence: opts.persistence ?? 'aof',
            extraArgs: [
              ...['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf'],
              ...['--cluster-port', String(busPort)],
              ...['--cluster-node-timeout', String(nodeTimeout)],
              // a dead shard must not stop the live ones from serving their slots
              ...['--cluster-require-full-coverage', 'no'],
              // replicas stay with the master they were given (the layout stays readable)
              ...['--cluster-allow-replica-migration', 'no'],
              // a replica's first sync starts at once, not after the default 5 s delay
              ...['--repl-diskless-sync-delay', '0'],
              ...(opts.announcePort
                ? [
                    ...['--cluster-announce-port', String(opts.announcePort(port))],
                    ...['--cluster-announce-bus-port', String(busPort)],
                  ]
                : []),
              ...(opts.extraArgs ?? []),
            ],
          });
        let current = await start();
        // restarts, by hand or by the supervisor, one at a time
        let restarts = Promise.resolve();
        const serially = (fn: () => Promise<void>) => (restarts = restarts.then(fn, fn));
        let delay = baseDelay;
        let startedAt = Date.now();
        const supervise = (proc: ServiceProcess) => {
          const s = opts.supervise;
          if (!s) return;
          void proc.exited.then(async (code) => {
            if (proc.stopping || closing) return;
            delay = Date.now() - startedAt < CRASH_LOOP_MS ? delay : baseDelay;
            s.onExit?.(node, code, delay);
            for (;;) {
              await new Promise((r) => setTimeout(r, delay));
              delay = Math.min(2 * delay, MAX_RESTART_DELAY_MS);
              let again = false;
              await serially(async () => {
                if (closing || current.process !== proc) return; // stopped, or restarted by hand
                try {
                  current = await start();
                  startedAt = Date.now();
                  supervise(current.process);
                  s.onRestart?.(node);
                } catch (err) {
                  s.onRestartFailed?.(node, err);
                  again = true;
                }
              });
              if (!again) return;
            }
          });
        };
        supervise(current.process);
        const node: ClusterNode = {
          url: current.url,
          port,
          busPort,
          role: i < opts.shards ? 'master' : 'replica',
          get process() {
            return current.process;
          },
          stop: () => current.stop(),
          restart: () =>
            serially(async () => {
              await current.stop();
              current = await start();
              startedAt = Date.now();
              supervise(current.process);
            }),
        };
        return node;
      }),
    );
    for (const result of settled) if (result.status === 'fulfilled') nodes.push(result.value);
    const failed = settled.find((result) => result.status === 'rejected');
    if (failed) throw failed.reason as unknown;
    await withAdmins(nodes, async (admins) => {
      const known = await Promise.all(admins.map(knownNodes));
      if (known.every((k) => k === 1)) {
        opts.progress?.(
          `forming a Redis Cluster: ${opts.shards} masters, ${opts.replicas} replica(s) each`,
        );
        await form(admins, opts.shards, opts.replicas, nodes);
      }
      await waitHealthy(admins, total, opts.shards * opts.replicas, 30_000);
    });
    writeFileSync(join(opts.dir, 'cluster.json'), `${JSON.stringify(layout)}\n`);
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    nodes,
    masters: nodes
      .filter((n) => n.role === 'master')
      .map((n) => ({ host: '127.0.0.1', port: n.port })),
    stop,
  };
}

function checkLayout(dir: string, want: Layout): void {
  const file = join(dir, 'cluster.json');
  if (!existsSync(file)) return;
  const had = JSON.parse(readFileSync(file, 'utf8')) as Layout;
  if (
    had.basePort !== want.basePort ||
    had.shards !== want.shards ||
    had.replicas !== want.replicas
  ) {
    throw new LaunchError(
      `${dir} holds a Redis Cluster of ${had.shards} masters with ${had.replicas} replica(s) each ` +
        `from port ${had.basePort}, not ${want.shards} / ${want.replicas} from ${want.basePort}: ` +
        'set LOCAL_REDIS_SHARDS, LOCAL_REDIS_REPLICAS and LOCAL_REDIS_PORT back, or remove that folder ' +
        '(its data goes with it)',
    );
  }
}

async function withAdmins<T>(
  nodes: ClusterNode[],
  use: (admins: Redis[]) => Promise<T>,
): Promise<T> {
  const admins = nodes.map(
    (n) =>
      new Redis({ host: '127.0.0.1', port: n.port, maxRetriesPerRequest: 1, lazyConnect: true }),
  );
  try {
    return await use(admins);
  } finally {
    for (const a of admins) a.disconnect();
  }
}

async function clusterInfo(admin: Redis): Promise<Record<string, string>> {
  const text = (await admin.cluster('INFO')) as string;
  return Object.fromEntries(
    text
      .split('\r\n')
      .filter(Boolean)
      .map((line) => line.split(':') as [string, string]),
  );
}

async function knownNodes(admin: Redis): Promise<number> {
  return Number((await clusterInfo(admin)).cluster_known_nodes);
}

/** Slots to the masters, everyone met, replicas attached. */
async function form(admins: Redis[], shards: number, replicas: number, nodes: ClusterNode[]) {
  await Promise.all(
    admins.slice(0, shards).map((a, i) => {
      const [from, to] = slotRange(i, shards);
      return a.call('CLUSTER', 'ADDSLOTSRANGE', from, to);
    }),
  );
  for (const n of nodes.slice(1)) {
    await admins[0]!.call('CLUSTER', 'MEET', '127.0.0.1', n.port, n.busPort);
  }
  await until('every node knows every other', 20_000, async () =>
    (await Promise.all(admins.map(knownNodes))).every((k) => k === nodes.length),
  );
  const masterIds = await Promise.all(
    admins.slice(0, shards).map((a) => a.call('CLUSTER', 'MYID') as Promise<string>),
  );
  for (let r = 0; r < replicas; r++) {
    for (let m = 0; m < shards; m++) {
      const replica = admins[shards + r * shards + m]!;
      // a replica can only follow a master its node table already lists as one
      await until(`replica of master ${m} accepted`, 20_000, async () => {
        try {
          await replica.call('CLUSTER', 'REPLICATE', masterIds[m]!);
          return true;
        } catch {
          return false;
        }
      });
    }
  }
}

/**
 * Every node says cluster_state:ok, sees all nodes, the slot map covers every slot, and every
 * replica has synced with its master (a failover before that would lose everything).
 */
async function waitHealthy(
  admins: Redis[],
  total: number,
  replicas: number,
  timeoutMs: number,
): Promise<void> {
  let last = '';
  await until(
    () => `the Redis Cluster to settle (${last})`,
    timeoutMs,
    async () => {
      const infos = await Promise.all(admins.map(clusterInfo));
      const bad = infos.findIndex(
        (i) =>
          i.cluster_state !== 'ok' ||
          Number(i.cluster_known_nodes) !== total ||
          Number(i.cluster_slots_ok) !== SLOTS,
      );
      if (bad < 0) {
        const repl = await Promise.all(admins.map((a) => a.info('replication')));
        const synced = repl.filter(
          (i) => i.includes('role:slave') && i.includes('master_link_status:up'),
        ).length;
        last = `${synced} of ${replicas} replicas synced`;
        return synced === replicas;
      }
      const i = infos[bad]!;
      last = `node ${bad}: state ${i.cluster_state}, ${i.cluster_known_nodes} nodes known, ${i.cluster_slots_ok} slots ok`;
      return false;
    },
  );
}

async function until(
  what: string | (() => string),
  timeoutMs: number,
  check: () => Promise<boolean>,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (await check()) return;
    } catch {
      // a node still loading its data answers with an error: ask again
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${typeof what === 'string' ? what : what()}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}
