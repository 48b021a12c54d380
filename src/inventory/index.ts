/**
 * The inventory's door: the only way in from above, and where one process's inventory is built
 * (createInventory: the shared subscriber, the segment locks, the catalogue and the sale, over
 * connections the composition root hands in). Inside, a room per idea, over a shared bottom
 * (protocol.ts, the sale scripts' gateway; records/, the codecs; layout.ts, order-ids.ts,
 * errors.ts):
 *   catalogue/    what each process knows of a product, seeding, catalogue numbers, the active set
 *   sale/         a purchase: the deduct under the segment locks, spills, the shopper's rate cell
 *   outbox/       sold orders on their way to PostgreSQL, and what became of a lost answer
 *   idempotency/  Idempotency-Key records (the purchase's port, services/purchase/idempotency.ts)
 *   rooms/        waiting rooms: the line, the admitter, the seat a purchase frees
 *   drop/         an operator's controls of a sale under way: pause, end, pace, units
 *   migrations/   data migrations of Redis keys and records
 * The rate-limit and admin-session stores are access/'s; `npm run structure` holds the rooms'
 * rules (test/project/structure.test.ts).
 */
import type { Registry } from 'prom-client';
import { LockClient, promLockMetrics, type LockSettings } from '../lock/index.js';
import type { Logger } from '../log.js';
import { batchedCounter, LabelChildren, type Tally } from '../metrics.js';
import type { RedisClient } from '../redis/connection.js';
import type { Keys } from '../redis/keys.js';
import { PubSub } from '../redis/pubsub.js';
import { Catalogue } from './catalogue/catalogue.js';
import { ReplicaWait } from '../redis/replica-wait.js';
import { MemoryHeadroom } from '../redis/memory-headroom.js';
import { Sale, type SaleMetrics } from './sale/sale.js';

export {
  activeProducts,
  archiveIfUntouched,
  touchActive,
  untouchedSinceQuiet,
  type Quiet,
} from './catalogue/active-set.js';
export { type PurchaseDeductArgs } from './sale/activity-leases.js';
export { Catalogue, type ProductView } from './catalogue/catalogue.js';
export { giveCatalogueNumber, productOfNumber } from './catalogue/catalogue-numbers.js';
export { ID_EPOCH_MS, mintOrderId, orderProductNumber } from './order-ids.js';
export {
  IdempotencyStore,
  type Begin,
  type IdempotencyHandle,
} from './idempotency/idempotency-store.js';
export {
  decodeIdempotencyRecord,
  encodeIdempotencyRecord,
  type IdempotencyRecord,
  type PurchaseAnswer,
  type StoredResponse,
} from './records/idempotency-record.js';
export { SaleError, unknownProduct, type SaleErrorCode, type SaleRefusal } from './errors.js';
export { type FoldedRecord } from './records/idempotency-record.js';
export type { RecordWritten, SalePlan, SaleReply } from './sale/outcome.js';
export { homeSegment, splitStock } from './layout.js';
export { type PendingOrderRef } from './outbox/pending-orders.js';
export { PendingOrderStore } from './outbox/pending-order-store.js';
export { ProductStore } from './catalogue/product-store.js';
export type { OrderResolution } from './outbox/protocol.js';
export {
  readMeta,
  readProductState,
  readProductStates,
  type ProductState,
  type ProductStatus,
  type SegmentView,
} from './catalogue/product-state.js';
export { decodeClaim, type SpillClaim } from './records/claim.js';
export { decodeMarker, type BuyerMarker } from './records/marker.js';
export { decodeOutboxEntry, type SoldOrder, type StreamEntry } from './records/outbox-entry.js';
export { type ProductMeta } from './records/product-meta.js';
export { claimSettle, queueOutboxCut, releaseMarker, restock } from './outbox/protocol.js';
export { DATA_MIGRATIONS, migrateRedisData } from './migrations/data-migrations.js';
export { migrateSegmentKeys } from './migrations/key-migration.js';
export { ReplicaLagError, ReplicaWait } from '../redis/replica-wait.js';
export { Sale } from './sale/sale.js';
export { RoomAdmitter, type RoomAdmitterOptions, type RoomMoments } from './rooms/admitter.js';
export { type DrawSteps } from './rooms/draw-gate.js';
export { DrawStore, type ScannedEntry } from './draw/store.js';
export { DrawPhase, type DrawBeacon, type DrawPhaseDeps } from './draw/phase.js';
export { DRAW_EVENT_SOURCE, type DrawEvent } from './draw/draw-events.js';
export { drawRoomSettings, type DrawSpec } from './catalogue/seeding.js';
export { type DrawWindow, type ProductChallenge } from './records/product-meta.js';
export { promRoomMetrics, type RoomMetrics } from './rooms/metrics.js';
export { RoomStore, type AdmitTick, type RoomPlace } from './rooms/store.js';
export { seatRelease } from './rooms/seat-release.js';
export {
  isSoldOut,
  mayComeBack,
  SOLD_OUT_BATCH,
  walkSoldOut,
  type SoldOutShopper,
} from './rooms/sold-out-walk.js';
export { type Price, type RoomSettings } from './records/product-meta.js';
export {
  seedProduct,
  type SeedOptions,
  type SeedResult,
  type SeedSpec,
} from './catalogue/seeding.js';
export { DropControls, type DropChange, type DropDeps, type UnitsChange } from './drop/controls.js';
export { DropRefusal, type DropRefusalCode } from './drop/refusal.js';
export { DropStore } from './drop/protocol.js';
export { PAUSED_STARTS_AT } from './records/segment-state.js';

export interface Inventory {
  keys: Keys;
  pubsub: PubSub;
  locks: LockClient;
  catalogue: Catalogue;
  sale: Sale;
  /** durable mode: waits for replicas to hold a segment's writes (undefined when off) */
  replicaWait: ReplicaWait | undefined;
  /** how close each Redis master is to maxmemory: what gives way first asks it */
  headroom: MemoryHeadroom;
  close(): Promise<void>;
}

export interface InventoryOptions {
  /** command connection */
  redis: RedisClient;
  /** this process's subscriber connection (connects on first use) */
  subscriber: RedisClient;
  keys: Keys;
  lock: Partial<LockSettings> & {
    /** how long a purchase waits for a segment lock before trying another segment */
    waitMs: number;
    /** lease of a segment lock held around one deduct */
    leaseMs: number;
    /** longest wait in this process's line for a home segment lock, before `waitMs` */
    queueMs: number;
  };
  logger?: Logger | undefined;
  registry?: Registry | undefined;
  /** durable mode: replicas each sale waits for (0: answer at once) */
  waitReplicas?: number | undefined;
  /** share of maxmemory from which what gives way is refused (default 0.9) */
  memoryShedAt?: number | undefined;
}

export function promSaleMetrics(registry: Registry): SaleMetrics {
  // counted in batches: after a sell-out, every refusal counts here
  const results = batchedCounter({
    name: 'seckill_purchases_total',
    help: 'Purchase attempts by result (accepted or the refusal code) and strategy',
    labelNames: ['result', 'strategy'],
    registers: [registry],
  });
  const children = new LabelChildren<Tally>();
  return {
    result(result, strategy) {
      const c =
        children.find(result, strategy) ??
        children.add(result, strategy, '', results.child({ result, strategy }));
      c.n++;
    },
  };
}

/** How long a sale waits for its replicas in durable mode before answering 503 (sold, unsure). */
const REPLICA_WAIT_TIMEOUT_MS = 1_000;

export function createInventory(opts: InventoryOptions): Inventory {
  const { waitMs, leaseMs, queueMs, ...lockSettings } = opts.lock;
  const pubsub = new PubSub(opts.subscriber);
  const locks = new LockClient({
    redis: opts.redis,
    pubsub,
    keys: opts.keys,
    ...lockSettings,
    ...(opts.registry && { metrics: promLockMetrics(opts.registry) }),
  });
  const catalogue = new Catalogue({
    redis: opts.redis,
    pubsub,
    keys: opts.keys,
    logger: opts.logger,
  });
  const replicaWait = opts.waitReplicas
    ? new ReplicaWait(opts.redis, opts.waitReplicas, REPLICA_WAIT_TIMEOUT_MS)
    : undefined;
  const sale = new Sale({
    redis: opts.redis,
    keys: opts.keys,
    catalogue,
    locks,
    lockWaitMs: waitMs,
    lockLeaseMs: leaseMs,
    lockQueueMs: queueMs,
    logger: opts.logger,
    metrics: opts.registry && promSaleMetrics(opts.registry),
    replicaWait,
  });
  return {
    keys: opts.keys,
    pubsub,
    locks,
    catalogue,
    sale,
    replicaWait,
    headroom: new MemoryHeadroom(opts.redis, opts.memoryShedAt ?? 0.9),
    async close() {
      catalogue.close();
      await locks.close();
      pubsub.close();
    },
  };
}
export {
  clearOutbox,
  OrderStore,
  readOutbox,
  compareStreamIds,
  streamIdMs,
  type ReturnedOrder,
} from './outbox/order-store.js';
export type { SegmentSnapshot } from './outbox/segment-snapshot.js';
