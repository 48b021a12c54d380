/**
 * The upkeep of a worker process: the sweeper on its own queue and worker, one sweep at a time,
 * on a BullMQ job scheduler; each sweep also prunes the order events past their retention.
 */
import type { Queue } from 'bullmq';
import type { Counter } from 'prom-client';
import { DoorStore } from '../access/index.js';
import { EventsRepository, publishProductEvents } from '../events/index.js';
import {
  defaultRules,
  FAIRNESS_EVENT_SOURCE,
  FairnessReports,
  publishFinalReports,
  rulesText,
  type FinalReportDeps,
} from '../services/index.js';
import {
  createUpkeepQueue,
  createUpkeepWorker,
  JOB,
  runUpkeep,
  SWEEP_SCHEDULER,
  type PaymentWindowDeps,
} from '../orders/index.js';
import { registerRedisMemoryGauge } from '../redis/memory-gauge.js';
import { exitWhenBullInitFails, pauseWhileStoreFull } from './bull-init.js';
import type { Core } from './core.js';
import { whenRedisAnswers } from './when-redis-answers.js';
import { inBackground } from '../redis/background.js';

/** Events one sweep prunes at most (the next sweep takes the rest). */
const PRUNE_BATCH = 10_000;

/** Each sale's fairness report, published on the feed once the sale is final. */
function finalReportsOf(core: Core): FinalReportDeps {
  const store = new DoorStore(core.redis, core.keys);
  const reports = new FairnessReports({
    catalogue: core.inventory.catalogue,
    store,
    orders: core.orderRows,
    rules: rulesText(defaultRules(core.config.admission.fairness)),
  });
  return {
    reports,
    products: async () => (await core.orderStore.activeProducts()).map((p) => p.productId),
    unitsSold: async (productId) => {
      const s = await core.productStore.state(productId);
      if (!s) return null;
      const over = s.status === 'ended' || s.status === 'sold out';
      return { epoch: s.epoch, over, units: s.sold - s.returned };
    },
    reported: {
      has: (productId, epoch) => store.reported(productId, epoch),
      mark: (productId, epoch) => store.markReported(productId, epoch),
      finalSince: (productId, epoch, now) => store.finalSince(productId, epoch, now),
    },
    publish: (batch) => publishProductEvents(core.db, FAIRNESS_EVENT_SOURCE, batch),
  };
}

/**
 * The sweeper, on its own queue and worker (one sweep at a time): every call it makes is bounded
 * (SWEEP_STEP_MS), and whatever it waits on, the order worker's slots stay free for persistence.
 */
export async function startUpkeep(
  core: Core,
  queue: Queue,
  paymentWindow: PaymentWindowDeps,
  failedAttempts: Counter<'kind'>,
): Promise<void> {
  const c = core.config.orders;
  const prefix = core.config.redis.queuePrefix;
  const upkeep = createUpkeepQueue(core.bullConnection('seckill-upkeep'), prefix);
  upkeep.on('error', (err) => core.logger.debug({ err: err.message }, 'upkeep queue error'));
  core.lifecycle.add('upkeep queue', () => upkeep.close());
  exitWhenBullInitFails(core)(upkeep, 'upkeep queue');
  const events = new EventsRepository(core.db);
  const finalReports = finalReportsOf(core);
  const worker = createUpkeepWorker({
    connection: core.bullConnection('seckill-upkeep-worker'),
    prefix,
    lockMs: c.workerLockMs,
    logger: core.logger,
    // a loop of its own: its commands are no request's (redis/background.ts)
    sweep: () =>
      inBackground('upkeep', async () => ({
        ...(await runUpkeep(
          {
            store: core.orderStore,
            rows: core.orderRows,
            queue,
            minAgeMs: c.sweepMinAgeMs,
            claimTtlMs: core.config.sale.claimTtlMs,
            batchSize: c.workerBatchSize,
            logger: core.logger,
          },
          paymentWindow,
        )),
        eventsPruned: await events.pruneEvents(core.config.events.retentionHours, PRUNE_BATCH),
        fairnessReports: await publishFinalReports(finalReports).catch((err: unknown) => {
          core.logger.warn({ err }, 'fairness reports not published');
          return 0;
        }),
      })),
  });
  worker.on('failed', (job) => failedAttempts.inc({ kind: job?.name ?? 'unknown' }));
  // a sweep cut short at shutdown is simply run again by the next one
  core.lifecycle.add('upkeep worker', () => worker.close(true));
  exitWhenBullInitFails(core)(worker, 'upkeep worker');
  pauseWhileStoreFull(worker);
  registerRedisMemoryGauge(core.registry, core.redis);
  // versions before the upkeep queue scheduled the sweep on the order queue
  await whenRedisAnswers(core, 'removing the old sweep schedule', () =>
    queue.removeJobScheduler(SWEEP_SCHEDULER),
  );
  await whenRedisAnswers(core, 'scheduling the sweep', () =>
    upkeep.upsertJobScheduler(
      SWEEP_SCHEDULER,
      { every: c.sweepIntervalMs },
      { name: JOB.sweep, opts: { removeOnComplete: true, removeOnFail: 100 } },
    ),
  );
}
