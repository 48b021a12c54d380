/**
 * Reconciliation of one product's current epoch: proves no unit was lost or sold twice.
 *
 *   seeded total = remaining stock + pending outbox units + persisted units
 *   every buyer marker lists exactly the shopper's orders, and every order is in its marker
 *   (or in an open spill claim, while a purchase is completing)
 *
 * The cut: each segment's stock, markers, claims and outbox are read in one MULTI (atomic per
 * segment), and PostgreSQL is read after every segment. The worker deletes an outbox entry only
 * after its row is committed, so an order is seen in the outbox, in PostgreSQL, or in both
 * (counted once); never in neither.
 */
import type { Redis } from 'ioredis';
import type { Db } from '../db/index.js';
import type { Keys } from '../redis/keys.js';
import { decodeEntry, type OutboxOrder } from './outbox.js';
import { ordersOf } from './repository.js';

export interface ReconcileReport {
  productId: string;
  epoch: number;
  total: number;
  remaining: number;
  /** units sold and still only in an outbox */
  pending: number;
  persisted: number;
  persistedOrders: number;
  distinctBuyers: number;
  openClaims: number;
  /** empty when everything adds up */
  problems: string[];
  ok: boolean;
}

/** Problems listed in full; past this many, a count. */
const MAX_LISTED = 20;

export async function reconcile(
  d: { redis: Redis; keys: Keys; db: Db },
  productId: string,
): Promise<ReconcileReport | null> {
  const meta = await d.redis.hgetall(d.keys.product(productId).meta);
  if (!meta.epoch) return null;
  const epoch = Number(meta.epoch);
  const segments = Number(meta.segments);
  const problems: string[] = [];
  const problem = (p: string) => {
    if (problems.length < MAX_LISTED) problems.push(p);
    else if (problems.length === MAX_LISTED) problems.push('... more problems not listed');
  };

  let remaining = 0;
  const outbox = new Map<string, OutboxOrder>();
  /** orderId -> user whose marker lists it */
  const marked = new Map<string, string>();
  /** orderId -> user with an open spill claim for it (the order may not exist yet) */
  const claimed = new Map<string, string>();
  const markerUnits = new Map<string, number>();
  for (let seg = 0; seg < segments; seg++) {
    const k = d.keys.segment(productId, seg);
    const r = await d.redis
      .multi()
      .hmget(k.state, 'stock', 'epoch')
      .hgetall(k.buyers)
      .hgetall(k.claims)
      .xrange(k.outbox, '-', '+')
      .exec();
    if (!r) throw new Error('reconcile: MULTI aborted');
    for (const [err] of r) if (err) throw err;
    const [stock, segEpoch] = r[0]![1] as [string | null, string | null];
    if (Number(segEpoch) !== epoch) problem(`segment ${seg} is at epoch ${segEpoch}, not ${epoch}`);
    if (Number(stock) < 0) problem(`segment ${seg} has negative stock ${stock}`);
    remaining += Number(stock ?? 0);
    for (const [user, marker] of Object.entries(r[1]![1] as Record<string, string>)) {
      const [units, list = ''] = marker.split(/:(.*)/s);
      markerUnits.set(user, Number(units));
      for (const id of list.split(',')) if (id) marked.set(id, user);
    }
    for (const [user, claim] of Object.entries(r[2]![1] as Record<string, string>)) {
      claimed.set(claim.split('|')[0]!, user);
    }
    for (const e of r[3]![1] as Array<[string, string[]]>) {
      const o = decodeEntry(e);
      if (o.epoch === epoch) outbox.set(o.orderId, o);
    }
  }

  const rows = await ordersOf(d.db, productId, epoch);
  const orders = new Map<string, { userId: string; quantity: number }>();
  for (const row of rows) orders.set(row.id, { userId: row.user_id, quantity: row.quantity });
  let pending = 0;
  for (const o of outbox.values()) {
    if (orders.has(o.orderId)) continue; // committed, its outbox delete still to come
    pending += o.quantity;
    orders.set(o.orderId, { userId: o.userId, quantity: o.quantity });
  }
  const persisted = rows.reduce((a, r) => a + r.quantity, 0);
  const total = Number(meta.total);
  if (remaining + pending + persisted !== total) {
    problem(
      `units: seeded ${total} != remaining ${remaining} + pending ${pending} + persisted ${persisted}`,
    );
  }

  const markedUnits = new Map<string, number>();
  const buyers = new Set<string>();
  for (const [id, o] of orders) {
    buyers.add(o.userId);
    const owner = marked.get(id) ?? claimed.get(id);
    if (owner === undefined) problem(`order ${id} of ${o.userId} is in no buyer marker or claim`);
    else if (owner !== o.userId) problem(`order ${id} of ${o.userId} is marked for ${owner}`);
    if (marked.has(id)) markedUnits.set(o.userId, (markedUnits.get(o.userId) ?? 0) + o.quantity);
  }
  for (const [id, user] of marked) {
    if (!orders.has(id)) problem(`marker of ${user} lists order ${id}, which does not exist`);
  }
  for (const [user, units] of markerUnits) {
    const found = markedUnits.get(user) ?? 0;
    if (found !== units) problem(`marker of ${user} says ${units} units, its orders hold ${found}`);
  }

  return {
    productId,
    epoch,
    total,
    remaining,
    pending,
    persisted,
    persistedOrders: rows.length,
    distinctBuyers: buyers.size,
    openClaims: claimed.size,
    problems,
    ok: problems.length === 0,
  };
}
