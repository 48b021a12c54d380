/**
 * ioredis connections. Every Redis key is named by `keys.ts`, so ioredis `keyPrefix` is refused
 * (BullMQ does the same): a prefix applied behind the key module's back breaks hash tags and Lua.
 */
import type { Socket } from 'node:net';
import { Cluster, Redis, type NatMap, type RedisOptions } from 'ioredis';
import { messageOf } from '../errors.js';
import type { Logger } from '../log.js';
import { timeOutCommands } from './command-timeout.js';
import { guardShards } from './shard-health.js';

export { Cluster, Redis };

/** A connection to one Redis or to a Redis Cluster: the product runs on either. */
export type RedisClient = Redis | Cluster;

export type RedisRole =
  /** request path: fails fast while Redis is away instead of queueing for long */
  | 'command'
  /** one per process, pub/sub only */
  | 'subscriber'
  /** handed to BullMQ, which requires maxRetriesPerRequest: null */
  | 'bullmq';

export interface RedisConnectionOptions {
  /** Shown in CLIENT LIST and logs. */
  name: string;
  role?: RedisRole;
  logger?: Logger;
  /**
   * A command whose reply is not read this long after it was written fails ('Command timed
   * out'), and the connection reconnects: a stalled connection must not hold every later command
   * behind the lost reply. Time this process's event loop was too busy to read does not count.
   * Command role only.
   */
  commandTimeoutMs?: number | undefined;
  /** Extra ioredis options; `keyPrefix` is refused. */
  overrides?: RedisOptions;
  /** Cluster only: node addresses as the cluster announces them -> where to reach them. */
  natMap?: NatMap;
}

/** Each connection's latest connection error, cleared when it is ready again (for readiness). */
const lastErrors = new WeakMap<RedisClient, string>();

/** Where Redis is: one server (`url`), or a cluster (`cluster`: some of its nodes). */
export interface RedisTarget {
  url: string;
  cluster?: ReadonlyArray<{ host: string; port: number }> | undefined;
}

/** A connection of `role` to the target: one Redis, or a Redis Cluster client. */
export function createRedisClient(target: RedisTarget, opts: RedisConnectionOptions): RedisClient {
  return target.cluster ? createCluster(target.cluster, opts) : createRedis(target.url, opts);
}

/** The options every connection to one node gets, whatever the topology. */
function nodeOptions(opts: RedisConnectionOptions): RedisOptions {
  const role = opts.role ?? 'command';
  return {
    connectionName: opts.name,
    // A command must not run twice after a reconnect: a resent deduct would sell twice.
    autoResendUnfulfilledCommands: false,
    // While Redis is away a queued command fails after two reconnect attempts (~0.3 s): the
    // request path answers 503 at once instead of hanging on a dead store.
    maxRetriesPerRequest: role === 'bullmq' ? null : 1,
    ...(role === 'bullmq' && { enableReadyCheck: false }),
  };
}

/**
 * An ioredis Cluster client. Redirections (MOVED, ASK) and refusals before execution (TRYAGAIN,
 * CLUSTERDOWN) are retried: the command did not run. A command whose connection closed is not
 * (`retryDelayOnFailover: 0`): it may have run, and a resent deduct would sell twice.
 */
export function createCluster(
  nodes: ReadonlyArray<{ host: string; port: number }>,
  opts: RedisConnectionOptions,
): Cluster {
  if (opts.overrides?.keyPrefix) {
    throw new Error('ioredis keyPrefix is not supported: key names come from src/redis/keys.ts');
  }
  const role = opts.role ?? 'command';
  const { lazyConnect, ...overrides } = opts.overrides ?? {};
  const cluster = new Cluster(
    nodes.map((n) => ({ host: n.host, port: n.port })),
    {
      redisOptions: { ...nodeOptions(opts), ...overrides },
      retryDelayOnFailover: 0,
      retryDelayOnClusterDown: 100,
      retryDelayOnTryAgain: 100,
      maxRedirections: 16,
      clusterRetryStrategy: (times) => Math.min(100 * times, 2_000),
      slotsRefreshTimeout: 2_000,
      // Commands are not retried after a closed connection (above), which is also what would
      // make the client reload its slot map: reload it now and then, so a failover or a moved
      // slot is learnt within this long even when no redirection says so.
      slotsRefreshInterval: SLOTS_REFRESH_MS,
      shardedSubscribers: role === 'subscriber',
      ...(opts.natMap && { natMap: opts.natMap }),
      ...(lazyConnect && { lazyConnect }),
    },
  );
  cluster.on('+node', (node: Redis) => {
    if (role !== 'subscriber') node.on('connect', () => coalesceWrites(node));
    if (role === 'command' && opts.commandTimeoutMs) {
      timeOutCommands(node, { ...opts, timeoutMs: opts.commandTimeoutMs }, false);
    }
    if (role === 'bullmq') failInFlightOnClose(node, opts);
  });
  // a node gone (killed, failed over): learn the new map at once rather than at the next round
  let lastRefresh = 0;
  const refresh = () => {
    if (Date.now() - lastRefresh < 200 || cluster.status !== 'ready') return;
    lastRefresh = Date.now();
    cluster.refreshSlotsCache();
  };
  // a shard that stops answering is refused at once, not waited on by every command for it
  if (role === 'command') guardShards(cluster, { logger: opts.logger });
  cluster.on('-node', refresh);
  cluster.on('node error', refresh);
  watchErrors(cluster, opts);
  return cluster;
}

function watchErrors(redis: RedisClient, opts: RedisConnectionOptions): void {
  let lastLogged = 0;
  redis.on('ready', () => lastErrors.delete(redis));
  redis.on('error', (err: unknown) => {
    lastErrors.set(redis, messageOf(err));
    const now = Date.now();
    if (now - lastLogged < ERROR_LOG_INTERVAL_MS) return;
    lastLogged = now;
    opts.logger?.warn({ redis: opts.name, err: messageOf(err) }, 'redis connection error');
  });
}

/** How often a cluster client reloads its slot map unasked. */
const SLOTS_REFRESH_MS = 2_000;

/** Connection errors repeat on every reconnect attempt; log one per interval. */
const ERROR_LOG_INTERVAL_MS = 10_000;

export function createRedis(url: string, opts: RedisConnectionOptions): Redis {
  if (opts.overrides?.keyPrefix) {
    throw new Error('ioredis keyPrefix is not supported: key names come from src/redis/keys.ts');
  }
  const role = opts.role ?? 'command';
  const redis = new Redis(url, {
    ...nodeOptions(opts),
    retryStrategy: (times) => Math.min(50 * 2 ** Math.min(times, 6), 2_000),
    ...opts.overrides,
  });
  if (role !== 'subscriber') redis.on('connect', () => coalesceWrites(redis));
  if (role === 'command' && opts.commandTimeoutMs) {
    timeOutCommands(redis, { ...opts, timeoutMs: opts.commandTimeoutMs }, true);
  }
  if (role === 'bullmq' || role === 'subscriber') failInFlightOnClose(redis, opts);
  watchErrors(redis, opts);
  return redis;
}

/** ioredis' queue of the commands sent and not yet answered (not in its typings). */
interface InFlight {
  commandQueue?: Deque;
  prevCommandQueue?: Deque | null;
}
interface Deque {
  shift(): { command: { promise: Promise<unknown>; reject(err: Error): void } } | undefined;
}

/**
 * A connection that closes fails the commands it had sent and not seen answered ("Connection is
 * closed.": they may have run, like a timed-out one). ioredis would forget them at the reconnect
 * instead (resending is off, so that no command runs twice), and on a BullMQ connection
 * (maxRetriesPerRequest: null, no command timeout) nothing else ever settles them: a worker whose
 * `moveToFinished` or `moveToActive` was lost so held its slot, or its fetch loop, for good. BullMQ
 * retries a failed call; the job is redelivered when its lock lapses. The subscriber has no
 * command timeout either: a lost SSUBSCRIBE held a product's first read (catalogue.ts) and a lock
 * waiter (lock/notices.ts) for good; failed, the channel is asked for again (redis/pubsub.ts).
 */
function failInFlightOnClose(redis: Redis, opts: RedisConnectionOptions): void {
  const queues = redis as unknown as InFlight;
  // a cut closes a connection at each reconnect: one line per interval, with the count since
  let failed = 0;
  let lastLogged = 0;
  redis.on('close', () => {
    // the same queue until the next connect (retry delays are longer than this tick)
    const lost = new Set([queues.commandQueue, queues.prevCommandQueue]);
    const err = new Error('Connection is closed.');
    for (const queue of lost) {
      for (let item = queue?.shift(); item; item = queue?.shift(), failed++) {
        // some are ioredis's own, which nobody awaits (a subscriber's re-subscription after a
        // reconnect): failed unhandled, one would end the process
        item.command.promise.catch(() => {});
        item.command.reject(err);
      }
    }
    if (failed === 0 || Date.now() - lastLogged < ERROR_LOG_INTERVAL_MS) return;
    opts.logger?.warn(
      { redis: opts.name, commands: failed },
      'connection closed with commands in flight: they fail (BullMQ retries its own)',
    );
    lastLogged = Date.now();
    failed = 0;
  });
}

/** Set while {@link sendNow}'s callback runs: its commands leave at the end of this tick. */
let urgent = false;

/**
 * Runs `send`, whose commands (issued synchronously, as a script call does) leave at the end of the
 * current tick instead of with the event-loop turn's batch: for a command sent while a lock is held,
 * where every microsecond of waiting is a microsecond the lock stays held.
 */
export function sendNow<T>(send: () => T): T {
  urgent = true;
  try {
    return send();
  } finally {
    urgent = false;
  }
}

/**
 * Commands sent in one turn of the event loop leave in one write: the socket is corked at the
 * first write and uncorked in the turn's check phase (setImmediate), after every I/O callback of
 * the turn has run, so the purchases of all the HTTP requests read in one turn share a write (Node
 * writes them with one writev). On loopback a write system call costs more CPU than the commands
 * themselves, in the API process and in Redis (bench: a lock-free sale's API CPU -10 %, Redis CPU
 * -18 %, against uncorking on the next tick). A write made inside {@link sendNow} uncorks on the
 * next tick instead (a lock held around it). Order is kept; nothing waits past the current turn.
 * ioredis' own auto-pipelining does the same with more bookkeeping, and measured slower here.
 */
function coalesceWrites(redis: Redis): void {
  const stream = (redis as unknown as { stream?: Socket }).stream;
  if (!stream) return;
  const write = stream.write;
  // each cork has its number: an uncork scheduled for an earlier cork does nothing
  let corks = 0;
  let corked = false;
  let soon = false;
  const uncorkOf = (cork: number) => () => {
    if (!corked || cork !== corks) return;
    corked = false;
    stream.uncork();
  };
  stream.write = function (this: Socket, ...args: Parameters<Socket['write']>) {
    if (!corked) {
      corked = true;
      soon = false;
      stream.cork();
      setImmediate(uncorkOf(++corks));
    }
    if (urgent && !soon) {
      soon = true;
      process.nextTick(uncorkOf(corks));
    }
    return write.apply(this, args);
  } as Socket['write'];
}

/**
 * Readiness: needs a PONG. A connection that is down says why at once (the connection error, not
 * "max retries"); one still coming up for the first time gets the caller's timeout to answer.
 * A cluster is up while any master answers, and names the masters that do not (degraded).
 */
export async function pingRedis(redis: RedisClient): Promise<void | string> {
  if (redis.status === 'end') throw new Error('redis connection is closed');
  const down = redis.status !== 'ready' && lastErrors.get(redis);
  if (down) throw new Error(`unreachable (${down})`);
  try {
    if (redis instanceof Cluster && redis.status === 'ready') return await pingMasters(redis);
    await redis.ping();
  } catch (err) {
    // a first ping on a connection that never came up: name why, not "max retries"
    const why = lastErrors.get(redis);
    throw why ? new Error(`unreachable (${why})`) : err;
  }
}

async function pingMasters(cluster: Cluster): Promise<string | undefined> {
  // The masters of the slot map: a dead one stays there (its slots are unserved) though the
  // client may have dropped its connection.
  const masters = [
    ...new Set(cluster.slots.map((owners) => owners[0]).filter(Boolean)),
  ] as string[];
  const byKey = new Map(
    cluster.nodes('all').map((n) => [`${n.options.host}:${n.options.port}`, n]),
  );
  const results = await Promise.allSettled(
    masters.map((key) => {
      const node = byKey.get(key);
      return node ? node.ping() : Promise.reject(new Error('no connection'));
    }),
  );
  const dead = masters.filter((_, i) => results[i]!.status === 'rejected');
  if (masters.length > 0 && dead.length === masters.length) {
    throw new Error(`no master of the cluster answers (${dead.join(', ')})`);
  }
  if (dead.length === 0) return undefined;
  // let the client learn the new map (a replica may have taken over)
  cluster.refreshSlotsCache();
  return `${dead.length} of ${masters.length} masters do not answer: ${dead.join(', ')}`;
}

/** QUIT politely, DISCONNECT if Redis is unreachable. */
export async function closeRedis(redis: RedisClient): Promise<void> {
  if (redis.status === 'end') return;
  if (redis.status !== 'ready') {
    redis.disconnect();
    return;
  }
  try {
    await redis.quit();
  } catch {
    redis.disconnect();
  }
}
