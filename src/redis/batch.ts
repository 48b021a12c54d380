/**
 * One batch of commands over keys that may live on different nodes of a Redis Cluster (a
 * product's segments). A cluster pipeline must stay on one node, so the batch is split into one
 * pipeline per node (per slot while the slot map is not known yet), sent in parallel; on one
 * Redis it is a single pipeline. Replies come back per item, in the caller's order.
 */
import calculateSlot from 'cluster-key-slot';
import type { ChainableCommander } from 'ioredis';
import { Cluster, type RedisClient } from './connection.js';

export type Reply = [Error | null, unknown];

/** Refusals that mean the command did not run here (a slot moved or is moving): safe to resend. */
const NOT_RUN = /^(MOVED|ASK|TRYAGAIN|CLUSTERDOWN)\b/;

/**
 * How often a batch item refused with a redirection is sent again (slots settling after a move or
 * a failover). A node restarted after a failover may still describe its old slots for a moment, and
 * a slot-map refresh that asks it reads that; the pauses grow to ~3 s in all, so the map settles.
 */
const REDIRECT_ATTEMPTS = 10;

/**
 * Queues `queue(pipeline, item)` for each item, on the node that holds `route(item)`'s slot.
 * Every command an item queues must hash to that slot. Items refused before running (MOVED, ASK,
 * TRYAGAIN, CLUSTERDOWN) are sent again after the slot map refreshes, so callers see only real
 * errors; commands that ran are never resent, unless `opts.reads` says every command is a read (an
 * item that mixes a keyless command such as TIME, which answers on any node, with keyed ones is
 * then resent whole when its keyed commands were refused).
 */
export async function pipelineByNode<T>(
  redis: RedisClient,
  items: readonly T[],
  route: (item: T) => string,
  queue: (pipeline: ChainableCommander, item: T) => void,
  opts: { reads?: boolean } = {},
): Promise<Reply[][]> {
  const out: Reply[][] = new Array(items.length);
  let pending = items.map((_, i) => i);
  for (let attempt = 1; pending.length > 0; attempt++) {
    const refused: number[] = [];
    await Promise.all(
      groupByNode(redis, pending, (i) => route(items[i]!)).map(async (group) => {
        const pipeline = redis.pipeline();
        const spans = group.map((i) => {
          const from = pipeline.length;
          queue(pipeline, items[i]!);
          return [from, pipeline.length] as const;
        });
        const replies = await execAll(pipeline);
        group.forEach((i, g) => {
          const mine = replies.slice(spans[g]![0], spans[g]![1]);
          const notRun = mine.some(([err]) => err && NOT_RUN.test(err.message));
          // Resent only if none of its commands ran: an item is all refused or all answered
          // in practice (one slot), and a partial one keeps its replies rather than run twice.
          const resend = notRun && (opts.reads || mine.every(([err]) => err));
          if (resend && attempt < REDIRECT_ATTEMPTS) refused.push(i);
          else out[i] = mine;
        });
      }),
    );
    if (refused.length > 0 && redis instanceof Cluster) {
      await new Promise((r) => setTimeout(r, Math.min(50 * attempt, 400)));
      await refreshSlots(redis);
    }
    pending = refused;
  }
  return out;
}

/** The replies of `pipelineByNode`, flattened; throws the first error. */
export async function execByNode<T>(
  redis: RedisClient,
  items: readonly T[],
  route: (item: T) => string,
  queue: (pipeline: ChainableCommander, item: T) => void,
): Promise<unknown[][]> {
  const replies = await pipelineByNode(redis, items, route, queue);
  return replies.map((item) =>
    item.map(([err, value]) => {
      if (err) throw err;
      return value;
    }),
  );
}

function groupByNode(redis: RedisClient, indexes: number[], key: (i: number) => string) {
  if (!(redis instanceof Cluster)) return [indexes];
  const groups = new Map<string, number[]>();
  for (const i of indexes) {
    const slot = calculateSlot(key(i));
    // slot map not loaded yet (or a slot without owner): one pipeline per slot is always valid
    const node = redis.slots[slot]?.join(',') ?? `slot:${slot}`;
    let g = groups.get(node);
    if (!g) groups.set(node, (g = []));
    g.push(i);
  }
  return [...groups.values()];
}

async function execAll(pipeline: ChainableCommander): Promise<Reply[]> {
  try {
    return ((await pipeline.exec()) ?? []) as Reply[];
  } catch (err) {
    // the whole pipeline refused before sending (e.g. no connection): every command failed alike
    return Array.from({ length: pipeline.length }, () => [err as Error, null] as Reply);
  }
}

/** Asks the cluster client to reload its slot map (after a MOVED it may still hold the old one). */
function refreshSlots(cluster: Cluster): Promise<void> {
  return new Promise((resolve) => {
    cluster.refreshSlotsCache(() => resolve());
  });
}
