/**
 * Order persistence: the outbox of each segment, the BullMQ order queue and the API side's
 * batching submitter, the worker and its sweeper, the order rows, and reconciliation. The
 * composition root wires them per process role.
 */
export { clearOutbox, readOutbox } from './outbox.js';
export {
  closeOrder,
  expireOrder,
  payOrder,
  returnUnits,
  sweepPayments,
  type CloseOutcome,
  type PaymentWindowDeps,
  type PayOutcome,
  type Settlement,
} from './payment-window.js';
export {
  findIntent,
  INTENT_ID,
  newIntentId,
  startPaymentIntent,
  type StartOutcome,
} from './payment-intents.js';
export {
  deliverOnce,
  DELIVERY_RETENTION_HOURS,
  pruneDeliveries,
  type DeliveryAnswer,
} from './webhook-deliveries.js';
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
export { reconcile, type ReconcileReport } from './reconcile.js';
export { findOrder, insertOrders, ordersOf, payBy, persistedBySegment } from './repository.js';
export { runUpkeep } from './upkeep.js';
export { sweep, SWEEP_STEP_MS, type SweepDeps, type SweepReport } from './sweeper.js';
export {
  cappedBackoff,
  createOrderWorker,
  createUpkeepWorker,
  type OrderWorkerOptions,
} from './worker.js';
