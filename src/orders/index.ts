/**
 * Order persistence: the outbox of each segment, the BullMQ order queue and the API side's
 * batching submitter, the worker and its sweeper, the order rows, and reconciliation. The
 * composition root wires them per process role.
 */
export { clearOutbox, readOutbox, type OutboxOrder } from './outbox.js';
export {
  closeOrder,
  payOrder,
  returnUnits,
  sweepPayments,
  type CloseOutcome,
  type LifecycleDeps,
  type PayOutcome,
  type Settlement,
} from './lifecycle.js';
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
  createOrderQueue,
  createUpkeepQueue,
  expiryJobId,
  scheduleExpiries,
  ORDER_QUEUE,
  UPKEEP_QUEUE,
  OrderSubmitter,
  PERSIST_JOB_OPTIONS,
  type PersistJob,
} from './queue.js';
export { registerOrderGauges } from './gauges.js';
export { reconcile, type ReconcileReport } from './reconcile.js';
export { findOrder, insertOrders, ordersOf, payBy, persistedBySegment } from './repository.js';
export { sweep, SWEEP_STEP_MS, type SweepDeps, type SweepReport } from './sweeper.js';
export {
  cappedBackoff,
  createOrderWorker,
  createUpkeepWorker,
  type OrderWorkerOptions,
} from './worker.js';
