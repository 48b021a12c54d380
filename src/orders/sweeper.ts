/**
 * The sweeper, run every SWEEP_INTERVAL_MS by a BullMQ job scheduler: re-enqueues outbox entries
 * older than SWEEP_MIN_AGE_MS (their enqueue was lost: a crash between deduct and enqueue, a
 * Redis error, a job that failed for good), and settles spill claims older than the purchase's
 * lease (IDEMPOTENCY_LEASE_MS) that a crash left open: finalised when the claim's order exists, released when it does not.
 * It walks only the active products (inventory/catalogue/active-set.ts), and archives those whose time there
 * is up and that have no work left: its cost follows the sales under way, not the catalogue.
 */
import type { Queue } from 'bullmq';
import {
  ReplicaLagError,
  untouchedSinceQuiet,
  type Quiet,
  type SoldOrder,
  type SpillClaim,
} from '../inventory/index.js';
import type { Logger } from '../log.js';
import { storeOutage, withinDeadline } from '../outages.js';
import { JOB, sweptBatchJobId, type PersistJob } from './jobs.js';

/** The Redis a sweep reads and settles (inventory's OrderStore). */
export interface SweepStore {
  serverNowMs(): Promise<number>;
  activeProducts(): Promise<Array<{ productId: string; until: number }>>;
  readMeta(productId: string): Promise<{ maxSegments: number } | null>;
  archiveIfUntouched(productId: string, until: number): Promise<boolean>;
  /** each active product's last touch and last quiet read */
  readQuiet(): Promise<Quiet>;
  /** a sweep that began at `at` found no work in any segment of `productId` */
  markQuiet(productId: string, at: number, until: number): Promise<void>;
  readOutbox(
    productId: string,
    segment: number,
    range?: { until?: string; count?: number },
  ): Promise<SoldOrder[]>;
  outboxLength(productId: string, segment: number): Promise<number>;
  claims(productId: string, segment: number): Promise<Array<[string, SpillClaim | null]>>;
  settleClaim(
    productId: string,
    homeSegment: number,
    userId: string,
    orderId: string,
    outcome: 'finalise' | 'release',
  ): Promise<{ code: string }>;
  /**
   * Durable mode: outbox entries are handed on only once the replicas hold them. A sale that
   * answered 503 because its replicas were slow is still in the outbox; persisting it before a
   * replica has it would let a failover sell its units twice.
   */
  readonly durable: boolean;
  masterOf(productId: string, segment: number): string | undefined;
  markReplicated(productId: string, segment: number, now: number): Promise<void>;
  confirmReplicated(productId: string, segment: number): Promise<void>;
}

export interface SweepDeps {
  store: SweepStore;
  /** the order rows (repository.ts) */
  rows: { findOrder(id: string): Promise<unknown> };
  queue: Queue;
  minAgeMs: number;
  claimTtlMs: number;
  batchSize: number;
  logger?: Logger;
}

export interface SweepReport {
  reenqueued: number;
  claimsFinalised: number;
  claimsReleased: number;
  /** products taken out of the active set (quiet, nothing left to do) */
  archived: number;
  /** active products left unread: untouched since a sweep found them without work */
  untouched: number;
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
    untouched: 0,
    unreachable: [],
  };
  const now = await step(deps.store.serverNowMs(), 'server time');
  /** masters whose replicas did not confirm this sweep: their other segments wait a sweep */
  const lagging = new Set<string>();
  const active = await step(deps.store.activeProducts(), 'active products');
  const quiet: Quiet = await step(deps.store.readQuiet(), 'quiet marks');
  for (const { productId, until } of active) {
    // its time is up: archived below if no segment has work (each read after `now`)
    const due = until < now;
    // nothing happened since a sweep found it without work: no segment is read
    let idle = untouchedSinceQuiet(quiet, productId, until);
    if (idle) report.untouched++;
    else idle = await sweepProduct(deps, report, { productId, until, now }, lagging);
    if (idle && due && (await step(deps.store.archiveIfUntouched(productId, until), 'archive')))
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

/**
 * Sweeps every segment of a product; one found without work in any segment is marked quiet (the
 * next sweeps read none of it until something touches it).
 * @returns whether no segment has work
 */
async function sweepProduct(
  deps: SweepDeps,
  report: SweepReport,
  at: { productId: string; until: number; now: number },
  lagging: Set<string>,
): Promise<boolean> {
  const { productId, now } = at;
  const segments = (await step(deps.store.readMeta(productId), 'meta'))?.maxSegments ?? 0;
  let idle = true;
  for (let seg = 0; seg < segments; seg++) {
    const master = deps.store.masterOf(productId, seg);
    try {
      if (master && lagging.has(master)) throw new ReplicaLagError(`${master} lags`);
      if (await sweepSegment(deps, report, { productId, seg, segments, now })) idle = false;
    } catch (err) {
      // A Redis Cluster shard that is down must not stop the sweep of the live ones.
      if (!storeOutage(err)) throw err;
      if (master && err instanceof ReplicaLagError) lagging.add(master);
      report.unreachable.push(`${productId}:${seg}`);
      idle = false;
    }
  }
  if (idle) await step(deps.store.markQuiet(productId, now, at.until), 'quiet mark');
  return idle;
}

/** @returns whether the segment has work (outbox entries, claims) */
async function sweepSegment(
  deps: SweepDeps,
  report: SweepReport,
  at: { productId: string; seg: number; segments: number; now: number },
): Promise<boolean> {
  const { productId, seg, segments, now } = at;
  const { store } = deps;
  if (store.durable) {
    // entries written before this write are replicated once this write is
    await step(store.markReplicated(productId, seg, now), 'replication mark');
    await step(store.confirmReplicated(productId, seg), 'replica wait');
  }
  const stale = await step(
    store.readOutbox(productId, seg, {
      until: String(now - deps.minAgeMs),
      count: MAX_PER_SEGMENT,
    }),
    'outbox',
  );
  for (let i = 0; i < stale.length; i += deps.batchSize) {
    const batch = stale.slice(i, i + deps.batchSize);
    if (await step(enqueueSwept(deps.queue, batch), 'enqueue')) report.reenqueued += batch.length;
  }
  const claims = await step(store.claims(productId, seg), 'claims');
  for (const [userId, claim] of claims) {
    if (!claim || now - claim.at < deps.claimTtlMs) continue;
    const { orderId } = claim;
    const sold = await step(orderExists(deps, productId, segments, orderId), 'claim order');
    const r = await step(
      store.settleClaim(productId, seg, userId, orderId, sold ? 'finalise' : 'release'),
      'claim settle',
    );
    if (r.code !== 'settled') continue;
    if (sold) report.claimsFinalised++;
    else report.claimsReleased++;
    deps.logger?.info({ productId, userId, orderId, sold }, 'settled an abandoned spill claim');
  }
  return (
    stale.length > 0 ||
    claims.length > 0 ||
    (await step(store.outboxLength(productId, seg), 'outbox length')) > 0
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
    const entries = await deps.store.readOutbox(productId, seg);
    if (entries.some((e) => e.orderId === orderId)) return true;
  }
  return (await deps.rows.findOrder(orderId)) !== undefined;
}
