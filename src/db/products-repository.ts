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
