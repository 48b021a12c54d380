/**
 * The products table's writes: the row a seed leaves behind (the orders' foreign key and the
 * admin's view of a sale). Here, not in inventory/, so SQL lives only in repositories.
 */
import { sql, type Insertable } from 'kysely';
import type { Db } from './index.js';
import type { Database } from './schema.js';

export type ProductSeedRow = Omit<Insertable<Database['products']>, 'id'>;

/** Inserts the product, or overwrites its sale's settings when it exists (a reseed). */
export async function upsertProduct(db: Db, id: string, row: ProductSeedRow): Promise<void> {
  await db
    .insertInto('products')
    .values({ id, ...row })
    .onConflict((oc) => oc.column('id').doUpdateSet({ ...row, updated_at: sql`now()` }))
    .execute();
}

/**
 * A sale epoch's price, before the epoch's stock is seeded: every order of the epoch finds it
 * when its row is inserted. Written again by a retried seed of the same epoch.
 */
export async function recordSalePrice(
  db: Db,
  productId: string,
  epoch: number,
  price: { amount: number; currency: string },
): Promise<void> {
  await db
    .insertInto('sale_prices')
    .values({ product_id: productId, epoch, unit_amount: price.amount, currency: price.currency })
    .onConflict((oc) =>
      oc
        .columns(['product_id', 'epoch'])
        .doUpdateSet({ unit_amount: price.amount, currency: price.currency }),
    )
    .execute();
}
