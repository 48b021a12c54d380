/**
 * A product's sale in Redis, behind one door: seeding (or reseeding) it and reading its state, one
 * product or the active ones (seeding.ts, product-state.ts hold the protocol).
 */
import { readProductState, readProductStates, type ProductState } from './product-state.js';
import {
  seedProduct,
  type InventoryDeps,
  type SeedOptions,
  type SeedResult,
  type SeedSpec,
} from './seeding.js';

export class ProductStore {
  constructor(private readonly deps: InventoryDeps) {}

  /** @throws SaleError `sale-live` when the sale runs and `force` is not set. */
  seed(productId: string, spec: SeedSpec, opts: SeedOptions = {}): Promise<SeedResult> {
    return seedProduct(this.deps, productId, spec, opts);
  }

  /** Stock and status; null when never seeded. */
  state(productId: string): Promise<ProductState | null> {
    return readProductState(this.deps, productId);
  }

  /** Up to `max` active products, by id, each as it stands. */
  states(max: number): Promise<ProductState[]> {
    return readProductStates(this.deps, max);
  }
}
