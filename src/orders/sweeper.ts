/**
 * The sweeper, run every SWEEP_INTERVAL_MS by a BullMQ job scheduler: re-enqueues outbox entries
 * older than SWEEP_MIN_AGE_MS (their enqueue was lost: a crash between deduct and enqueue, a
 * Redis error, a job that failed for good), and settles spill claims older than CLAIM_TTL_MS
 * that a crash left open: finalised when the claim's order exists, released when it does not.
 * It walks only the active products (inventory/activity.ts), and archives those whose time there
 * is up and that have no work left: its cost follows the sales under way, not the catalogue.
 */
import type { Queue } from 'bullmq';
import type { RedisClient } from '../redis/connection.js';
import type { Db } from '../db/index.js';
import {
  activeProducts,
  archiveIfUntouched,
  claimSettle,
  decodeClaim,
  readMeta,
  ReplicaLagError,
  type ReplicaWait,
} from '../inventory/index.js';
import type { Logger } from '../log.js';
import type { Keys } from '../redis/keys.js';
import { serverNowMs } from '../redis/time.js';
import { storeOutage, withinDeadline } from '../outages.js';
import { readOutbox } from './outbox.js';
import type { SoldOrder } from '../inventory/index.js';
import { JOB, sweptBatchJobId, type PersistJob } from './jobs.js';
import { findOrder } from './repository.js';

export interface SweepDeps {
  redis: RedisClient;
  keys: Keys;
  db: Db;
  queue: Queue;
  minAgeMs: number;
  claimTtlMs: number;
  batchSize: number;
  logger?: Logger;
  /**
   * Durable mode: outbox entries are handed on only once the replicas hold them. A sale that
   * answered 503 because its replicas were slow is still in the outbox; persisting it before a
   * replica has it would let a failover sell its units twice.
   */
  replicaWait?: ReplicaWait | undefined;
}

export interface SweepReport {
  reenqueued: number;
  claimsFinalised: number;
  claimsReleased: number;
  /** products taken out of the active set (quiet, nothing left to do) */
  archived: number;
  /** segments ("product:segment") whose Redis shard did not answer this time */
  unreachable: string[];
}

/** Most entries re-enqueued per segment per sweep (the next sweep takes the rest). */
const MAX_PER_SEGMENT = 20_000;

/**
 * Longest wait for any one call of a sweep on Redis, BullMQ or PostgreSQL. Command timeouts do
 * not cover everything: BullMQ's connection waits forever by design, and a cluster client queues
 * commands while it has no node for them. A call past this fails its segment (tried again next
 * sweep), never the sweep for good.
 */
export const SWEEP_STEP_MS = 5_000;

const step = <T>(work: Promise<T>, what: string) =>
  withinDeadline(work, SWEEP_STEP_MS, `sweeper: ${what}`);

/** Adds a sweep batch, or revives the job that already carries it (failed or finished early). */
async function enqueueSwept(queue: Queue, orders: SoldOrder[]): Promise<boolean> {
  const jobId = sweptBatchJobId(orders);
  const existing = await queue.getJob(jobId);
  if (existing) {
    const state = await existing.getState();
    if (state === 'failed') {
      await existing.retry('failed');
      return true;
    }
    if (state !== 'completed' && state !== 'unknown') return false; // still on its way
    await existing.remove().catch(() => {});
  }
  await queue.add(JOB.persist, { orders } satisfies PersistJob, { jobId });
  return true;
}

export async function sweep(deps: SweepDeps): Promise<SweepReport> {
  const report: SweepReport = {
    reenqueued: 0,
    claimsFinalised: 0,
    claimsReleased: 0,
    archived: 0,
    unreachable: [],
  };
  const now = await step(serverNowMs(deps.redis), 'server time');
  /** masters whose replicas did not confirm this sweep: their other segments wait a sweep */
  const lagging = new Set<string>();
  for (const { productId, until } of await step(activeProducts(deps), 'active products')) {
    const segments = (await step(readMeta(deps, productId), 'meta'))?.maxSegments ?? 0;
    // its time is up: archived below if no segment has work (each read after `now`)
    const due = until < now;
    let idle = due;
    for (let seg = 0; seg < segments; seg++) {
      const master = deps.replicaWait?.masterOf(deps.keys.segment(productId, seg).replicated);
      try {
        if (master && lagging.has(master)) throw new ReplicaLagError(`${master} lags`);
        if (await sweepSegment(deps, report, { productId, seg, segments, now, due })) idle = false;
      } catch (err) {
        // A Redis Cluster shard that is down must not stop the sweep of the live ones.
        if (!storeOutage(err)) throw err;
        if (master && err instanceof ReplicaLagError) lagging.add(master);
        report.unreachable.push(`${productId}:${seg}`);
        idle = false;
      }
    }
    if (idle && (await step(archiveIfUntouched(deps, productId, until), 'archive')))
      report.archived++;
  }
  if (report.reenqueued > 0) deps.logger?.info(report, 'sweeper re-enqueued outbox orders');
  if (report.unreachable.length > 0) {
    deps.logger?.warn(
      { segments: report.unreachable },
      'sweeper could not reach some segments; the next sweep tries them again',
    );
  }
  return report;
}

/** @returns whether the segment has work (outbox entries, claims); read only when `due` */
async function sweepSegment(
  deps: SweepDeps,
  report: SweepReport,
  at: { productId: string; seg: number; segments: number; now: number; due: boolean },
): Promise<boolean> {
  const { productId, seg, segments, now } = at;
  const k = deps.keys.segment(productId, seg);
  if (deps.replicaWait) {
    // entries written before this write are replicated once this write is
    await step(deps.redis.set(k.replicated, String(now), 'PX', 86_400_000), 'replication mark');
    await step(deps.replicaWait.confirm(k.replicated), 'replica wait');
  }
  const stale = await step(
    readOutbox(deps.redis, deps.keys, productId, seg, {
      until: String(now - deps.minAgeMs),
      count: MAX_PER_SEGMENT,
    }),
    'outbox',
  );
  for (let i = 0; i < stale.length; i += deps.batchSize) {
    const batch = stale.slice(i, i + deps.batchSize);
    if (await step(enqueueSwept(deps.queue, batch), 'enqueue')) report.reenqueued += batch.length;
  }
  const claims = await step(deps.redis.hgetall(k.claims), 'claims');
  for (const [userId, raw] of Object.entries(claims)) {
    const claim = decodeClaim(raw);
    if (!claim || now - claim.at < deps.claimTtlMs) continue;
    const { orderId } = claim;
    const sold = await step(orderExists(deps, productId, segments, orderId), 'claim order');
    const r = await step(
      claimSettle(deps.redis, k, userId, orderId, sold ? 'finalise' : 'release'),
      'claim settle',
    );
    if (r.code !== 'settled') continue;
    if (sold) report.claimsFinalised++;
    else report.claimsReleased++;
    deps.logger?.info({ productId, userId, orderId, sold }, 'settled an abandoned spill claim');
  }
  if (!at.due) return true;
  return (
    stale.length > 0 ||
    Object.keys(claims).length > 0 ||
    (await step(deps.redis.xlen(k.outbox), 'outbox length')) > 0
  );
}

/**
 * Whether the claim's spill deduct happened. Outboxes first, then PostgreSQL: the worker deletes
 * an entry only after its row is committed, so an order is always in at least one of the two
 * when read in this order.
 */
async function orderExists(
  deps: SweepDeps,
  productId: string,
  segments: number,
  orderId: string,
): Promise<boolean> {
  for (let seg = 0; seg < segments; seg++) {
    const entries = await readOutbox(deps.redis, deps.keys, productId, seg);
    if (entries.some((e) => e.orderId === orderId)) return true;
  }
  return (await findOrder(deps.db, orderId)) !== undefined;
}
