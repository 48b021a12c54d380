/**
 * "Is this Redis Cluster shard sick?", answered in one place. A master that stops answering
 * (paused, killed, cut off) would otherwise take every command for its slots until each one times
 * out: each purchase with one key there waits the whole command timeout, and its in-flight slot
 * with it. Two things mark a shard:
 *   - the breaker, on the command connection: the first command on a shard that fails for want of
 *     the shard (a timeout, a closed or refused connection) marks it; from then on a command for
 *     its slots is refused before it is sent (ShardDownError, which says nothing ran) until a PING
 *     on the shard's own connection answers, or a command already on its way there succeeds;
 *   - a hold ({@link ShardHealth.failed}): a caller whose command failed with a store outage
 *     there skips the shard for SHARD_DOWN_HOLD_MS, whatever a probe says meanwhile.
 * Commands for the other shards never wait on it. A failover moves the slots to another node,
 * which is not marked: they are served again as soon as the client's slot map has the new master,
 * so each probe of a marked shard reads the map first (every SHARD_PROBE_MS), not waiting for the
 * client's periodic refresh or a node dropped from its pool: a slot whose master changed is
 * refused for one probe period and one map read at most after the cluster elected the new master.
 * On one Redis there are no shards: nothing is marked.
 */
import type { Logger } from '../log.js';
import { ShardDownError, shardDown, storeOutage } from '../outages.js';
import calculateSlot from 'cluster-key-slot';
import { Cluster, type Redis } from 'ioredis';

type RedisClient = Redis | Cluster;

/** How long after a failure (or a failed probe) the shard is probed again. */
export const SHARD_PROBE_MS = 250;

/** Answers from a live node that only say "not now" (the client retries them itself). */
const LIVE_NODE_REFUSAL = /CLUSTERDOWN|TRYAGAIN|LOADING|MOVED|ASK|redirections/;

type Send = Cluster['sendCommand'];
type CommandOf = Parameters<Send>[0];
type NodeArg = { slot?: number | null; redis?: Redis } | undefined;

const breakers = new WeakMap<Cluster, ShardBreaker>();

class ShardBreaker {
  /** shards ("host:port") refused at present */
  private readonly sick = new Set<string>();
  private readonly probing = new Set<string>();

  constructor(
    private readonly cluster: Cluster,
    private readonly opts: { logger?: Logger | undefined; probeMs: number },
  ) {}

  isSick(shard: string): boolean {
    return this.sick.size > 0 && this.sick.has(shard);
  }

  /** The shard a command goes to, as the client routes it (undefined: no key, no map yet). */
  shardOf(command: CommandOf, node: NodeArg): string | undefined {
    if (node?.redis) return `${node.redis.options.host}:${node.redis.options.port}`;
    const slot = node?.slot ?? command.getSlot();
    return typeof slot === 'number' ? this.cluster.slots[slot]?.[0] : undefined;
  }

  failed(shard: string, err: unknown): void {
    if (!(err instanceof Error) || err instanceof ShardDownError) return;
    if (!storeOutage(err) || LIVE_NODE_REFUSAL.test(err.message)) return;
    if (!this.sick.has(shard)) {
      this.sick.add(shard);
      this.opts.logger?.warn({ shard, err: err.message }, 'redis shard failed: refusing its slots');
    }
    this.probeLater(shard);
  }

  answered(shard: string): void {
    if (this.sick.size > 0 && this.sick.delete(shard)) {
      this.opts.logger?.info({ shard }, 'redis shard answers again');
    }
  }

  private probeLater(shard: string): void {
    if (this.probing.has(shard)) return;
    this.probing.add(shard);
    setTimeout(() => void this.probe(shard), this.opts.probeMs).unref();
  }

  /**
   * Reads the slot map (its slots may have a new master by now: a failover), then one PING on the
   * shard's own connection (each bounded: the map read by slotsRefreshTimeout, the PING by the
   * command timeout).
   */
  private async probe(shard: string): Promise<void> {
    try {
      await this.readMap();
      const node = this.cluster
        .nodes('all')
        .find((n) => `${n.options.host}:${n.options.port}` === shard);
      // No connection to it any more (dropped after a failover or a timeout): let the next command
      // try it, and mark it again if it fails.
      if (node) await node.ping();
      this.probing.delete(shard);
      this.answered(shard);
    } catch {
      this.probing.delete(shard);
      if (this.sick.has(shard)) this.probeLater(shard);
    }
  }

  /** One read of the slot map (the client merges reads asked meanwhile); a failed one is let be. */
  private readMap(): Promise<void> {
    if (this.cluster.status !== 'ready') return Promise.resolve();
    return new Promise((resolve) => this.cluster.refreshSlotsCache(() => resolve()));
  }
}

/**
 * Installs the breaker on a cluster client of the command role: commands for a sick shard's slots
 * are refused unsent (ShardDownError). Idempotent per client.
 */
export function guardShards(
  cluster: Cluster,
  opts: { logger?: Logger | undefined; probeMs?: number } = {},
): void {
  if (breakers.has(cluster)) return;
  const breaker = new ShardBreaker(cluster, { ...opts, probeMs: opts.probeMs ?? SHARD_PROBE_MS });
  breakers.set(cluster, breaker);
  const send = cluster.sendCommand.bind(cluster) as (...args: unknown[]) => unknown;
  cluster.sendCommand = function (command: CommandOf, stream?: unknown, node?: NodeArg) {
    const shard = breaker.shardOf(command, node);
    if (shard !== undefined && breaker.isSick(shard)) {
      command.reject(new ShardDownError(shard));
      return command.promise;
    }
    if (shard !== undefined) {
      // the command's final outcome (the client wraps these for its redirections and retries)
      const { resolve, reject } = command;
      command.resolve = (value) => {
        breaker.answered(shard);
        resolve.call(command, value);
      };
      command.reject = (err) => {
        breaker.failed(shard, err);
        reject.call(command, err);
      };
    }
    return send(command, stream, node);
  } as Send;
}

/** The shard ("host:port") holding `key`'s slot, or undefined on one Redis / before slots load. */
export function shardOfKey(redis: RedisClient, key: string): string | undefined {
  if (!(redis instanceof Cluster)) return undefined;
  return redis.slots[calculateSlot(key)]?.[0];
}

/** How long a shard a caller saw fail is skipped before it is tried again. */
export const SHARD_DOWN_HOLD_MS = 1_000;

/**
 * The shards of one connection that failed a moment ago: the breaker's (when installed on it) and
 * those its callers hold down. A purchase whose home segment lives on one is refused at once
 * (503); a spill skips segments there.
 */
export class ShardHealth {
  private readonly downUntil = new Map<string, number>();

  constructor(
    private readonly redis: RedisClient,
    private readonly holdMs = SHARD_DOWN_HOLD_MS,
  ) {}

  /** The shard ("host:port") holding `key` when it is sick at present; else undefined. */
  down(key: string): string | undefined {
    const shard = shardOfKey(this.redis, key);
    if (!shard) return undefined;
    if (this.redis instanceof Cluster && breakers.get(this.redis)?.isSick(shard)) return shard;
    if (this.downUntil.size === 0) return undefined;
    const until = this.downUntil.get(shard);
    if (until === undefined) return undefined;
    if (Date.now() < until) return shard;
    this.downUntil.delete(shard);
    return undefined;
  }

  /** A command on `key` failed: a store outage holds its shard down (refused unsent: the breaker's). */
  failed(key: string, err: unknown): void {
    if (!storeOutage(err) || shardDown(err)) return;
    const shard = shardOfKey(this.redis, key);
    if (shard) this.downUntil.set(shard, Date.now() + this.holdMs);
  }
}
