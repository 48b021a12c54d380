/**
 * Order persistence: the BullMQ order queue and the API side's batching submitter, the worker
 * and its sweeper, the payment window, and reconciliation. Each module declares the storage it
 * needs as a small port: the SQL is in the repositories (`*repository.ts`), the Redis behind
 * inventory's OrderStore; only BullMQ's queue and worker take a Redis connection. The
 * composition root wires them per process role.
 */
export {
  closeOrder,
  expireOrder,
  payOrder,
  returnUnits,
  sweepPayments,
  type CloseOutcome,
  type PaymentWindowDeps,
  type PaymentWindowRows,
  type PayOutcome,
  type Settlement,
  type UnitReturns,
} from './payment-window.js';
export { PaymentRepository } from './payment-window-repository.js';
export {
  disputeOrder,
  refundOrder,
  type AfterPaidOutcome,
  type AfterPaidRows,
  type DisputeChange,
  type Refund,
} from './after-paid.js';
export {
  findIntent,
  INTENT_ID,
  newIntentId,
  startPaymentIntent,
  type StartOutcome,
} from './payment-intents-repository.js';
export {
  noticeOnce,
  NOTICE_RETENTION_HOURS,
  pruneNotices,
  type NoticeAnswer,
  type NoticeKey,
  type NoticeProvider,
} from './payment-notices-repository.js';
export {
  batchJobId,
  expiryJobId,
  JOB,
  ORDER_QUEUE,
  SWEEP_SCHEDULER,
  sweptBatchJobId,
  UPKEEP_QUEUE,
  type ExpireJob,
  type PersistJob,
} from './jobs.js';
export {
  createOrderQueue,
  createUpkeepQueue,
  scheduleExpiries,
  OrderSubmitter,
  PERSIST_JOB_OPTIONS,
} from './queue.js';
export { registerOrderGauges } from './gauges.js';
export { reconcile, type ReconcileReport, type ReconcileSources } from './reconcile.js';
export {
  findOrder,
  insertOrders,
  ordersOf,
  OrdersRepository,
  payBy,
  persistedBySegment,
  listOrders,
  type OrderFilter,
  type OrderRow,
  type OrderRowStatus,
  type PaymentIntentRow,
} from './repository.js';
export { runUpkeep } from './upkeep.js';
export {
  sweep,
  SWEEP_STEP_MS,
  type SweepDeps,
  type SweepReport,
  type SweepStore,
} from './sweeper.js';
export {
  cappedBackoff,
  createOrderWorker,
  createUpkeepWorker,
  type OrderWorkerOptions,
} from './worker.js';
