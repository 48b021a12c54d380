/**
 * The product use cases behind the shop's public view and the admin routes: seed (or reseed), read
 * back every segment with its persisted units, and reconcile.
 */
import type { RedisClient } from '../redis/connection.js';
import type { Db } from '../db/index.js';
import {
  OrderStore,
  readProductState,
  seedProduct,
  type Catalog,
  type ProductState,
  type SeedResult,
  type SeedSpec,
} from '../inventory/index.js';
import {
  OrdersRepository,
  persistedBySegment,
  reconcile,
  type ReconcileReport,
} from '../orders/index.js';
import type { Keys } from '../redis/keys.js';

export interface ProductsDeps {
  redis: RedisClient;
  keys: Keys;
  db: Db;
  /** this process's catalog, told at once about a reseed (others learn it by notice) */
  catalog?: Catalog | undefined;
}

export interface AdminProductView extends ProductState {
  segments: Array<ProductState['segments'][number] & { persisted: number }>;
}

export class Products {
  constructor(private readonly deps: ProductsDeps) {}

  /** @throws SaleError `sale-live` when the sale runs and `force` is not set. */
  seed(productId: string, spec: SeedSpec, opts: { force?: boolean } = {}): Promise<SeedResult> {
    return seedProduct(this.deps, productId, spec, opts);
  }

  /** Stock and status from Redis; null when never seeded. */
  state(productId: string): Promise<ProductState | null> {
    return readProductState(this.deps, productId);
  }

  /** Every segment with its stock, sold, pending and persisted units; null when never seeded. */
  async adminView(productId: string): Promise<AdminProductView | null> {
    const s = await readProductState(this.deps, productId);
    if (!s) return null;
    const persisted = await persistedBySegment(this.deps.db, productId, s.epoch);
    return {
      ...s,
      segments: s.segments.map((seg) => ({ ...seg, persisted: persisted.get(seg.segment) ?? 0 })),
    };
  }

  /** null when never seeded. */
  reconcile(productId: string): Promise<ReconcileReport | null> {
    const { redis, keys, db } = this.deps;
    return reconcile(
      { store: new OrderStore(redis, keys), rows: new OrdersRepository(db) },
      productId,
    );
  }
}
