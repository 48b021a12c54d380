/**
 * The product use cases behind the shop's public view and the admin routes: seed (or reseed), read
 * back every segment with its persisted units, and reconcile.
 */
import type { ProductState, SeedOptions, SeedResult, SeedSpec } from '../../inventory/index.js';
import type { ReconcileReport } from '../../orders/index.js';

/** A product's sale in Redis (inventory's ProductStore, which tells this process's catalogue). */
export interface ProductRecords {
  /** @throws SaleError `sale-live` when the sale runs and `force` is not set. */
  seed(productId: string, spec: SeedSpec, opts?: SeedOptions): Promise<SeedResult>;
  state(productId: string): Promise<ProductState | null>;
}

export interface ProductsDeps {
  inventory: ProductRecords;
  /** persisted units per segment of a sale (the order rows) */
  persistedBySegment(productId: string, epoch: number): Promise<Map<number, number>>;
  /** Redis against PostgreSQL for one product (orders' reconcile); null when never seeded */
  reconcile(productId: string): Promise<ReconcileReport | null>;
}

export interface AdminProductView extends ProductState {
  segments: Array<ProductState['segments'][number] & { persisted: number }>;
}

export class Products {
  constructor(private readonly deps: ProductsDeps) {}

  /** @throws SaleError `sale-live` when the sale runs and `force` is not set. */
  seed(productId: string, spec: SeedSpec, opts: SeedOptions = {}): Promise<SeedResult> {
    return this.deps.inventory.seed(productId, spec, opts);
  }

  /** Stock and status from Redis; null when never seeded. */
  state(productId: string): Promise<ProductState | null> {
    return this.deps.inventory.state(productId);
  }

  /** Every segment with its stock, sold, pending and persisted units; null when never seeded. */
  async adminView(productId: string): Promise<AdminProductView | null> {
    const s = await this.deps.inventory.state(productId);
    if (!s) return null;
    const persisted = await this.deps.persistedBySegment(productId, s.epoch);
    return {
      ...s,
      segments: s.segments.map((seg) => ({ ...seg, persisted: persisted.get(seg.segment) ?? 0 })),
    };
  }

  /** null when never seeded. */
  reconcile(productId: string): Promise<ReconcileReport | null> {
    return this.deps.reconcile(productId);
  }
}
