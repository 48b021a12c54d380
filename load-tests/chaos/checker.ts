/**
 * The chaos run's checker: a pure function of what the clients saw (the history) and what the
 * public/admin API and PostgreSQL answered after the settle phase. No I/O here, so a history kept
 * as JSON lines can be re-checked, and tests can feed it broken histories.
 */
import type {
  FinalState,
  HistoryEntry,
  InvariantResult,
  OrderRow,
  PurchaseOp,
  ResolveOp,
  SettleOp,
} from './history.js';

/**
 * A return normally follows its close within milliseconds; past this one was cut short (a Redis
 * fault mid-return) and finished by a retry or the sweep. Late is not lost: reported, not broken.
 */
export const LATE_RETURN_MS = 2_000;

const describe = (p: PurchaseOp): string =>
  `op ${p.op} user ${p.user} key ${p.key} product ${p.product} x${p.quantity} (${p.status})`;

function purchases(history: HistoryEntry[]): PurchaseOp[] {
  return history.filter((h): h is PurchaseOp => h.type === 'purchase');
}

/**
 * Default mode: the acknowledged orders a failover lost (reconciliation names them, or they have
 * no row at all). Their units went back to stock with the failover and may be sold again, and
 * their buyers' markers with them: they are no-lost-ack's to judge, not an oversell or a second
 * purchase. Durable mode loses nothing: none.
 */
function lostOrders(history: HistoryEntry[], final: FinalState): Set<string> {
  if (final.durable) return new Set();
  const rows = new Set(final.orders.map((o) => o.id));
  const lost = new Set(final.reconcileLost);
  for (const h of purchases(history))
    if (h.outcome === 'ok' && h.orderId && !rows.has(h.orderId)) lost.add(h.orderId);
  return lost;
}

function noOversell(history: HistoryEntry[], final: FinalState): InvariantResult {
  const lost = lostOrders(history, final);
  for (const p of final.products) {
    const ok = purchases(history).filter((h) => h.product === p.id && h.outcome === 'ok');
    const acked = ok.reduce((n, h) => n + h.quantity, 0);
    const lostUnits = ok
      .filter((h) => lost.has(h.orderId ?? ''))
      .reduce((n, h) => n + h.quantity, 0);
    // held units already count in the acknowledged ones once paid or pending; the bound is seeded
    const live = final.orders.filter(
      (o) => o.product === p.id && o.status !== 'cancelled' && o.status !== 'expired',
    );
    const rows = live.reduce((n, o) => n + o.quantity, 0);
    const lostRows = live.filter((o) => lost.has(o.id)).reduce((n, o) => n + o.quantity, 0);
    const restocked = final.orders
      .filter((o) => o.product === p.id && o.restocks > 0)
      .reduce((n, o) => n + o.quantity, 0);
    const beyond = lostUnits ? ` (${lostUnits} of them lost in a failover)` : '';
    if (acked - restocked - lostUnits > p.seeded)
      return {
        name: 'no-oversell',
        ok: false,
        counterExample: `product ${p.id}: ${acked} units acknowledged${beyond} (${restocked} restocked) > ${p.seeded} seeded`,
      };
    if (rows - lostRows > p.seeded)
      return {
        name: 'no-oversell',
        ok: false,
        counterExample: `product ${p.id}: ${rows} units in live order rows${lostRows ? ` (${lostRows} lost in a failover)` : ''} > ${p.seeded} seeded`,
      };
  }
  return { name: 'no-oversell', ok: true };
}

function noLostAck(history: HistoryEntry[], final: FinalState): InvariantResult {
  const rows = new Map<string, number>();
  for (const o of final.orders) rows.set(o.id, (rows.get(o.id) ?? 0) + 1);
  const missing = purchases(history).filter(
    (h) => h.outcome === 'ok' && !rows.has(h.orderId ?? ''),
  );
  const doubled = purchases(history).find(
    (h) => h.outcome === 'ok' && (rows.get(h.orderId ?? '') ?? 0) > 1,
  );
  if (doubled)
    return {
      name: 'no-lost-ack',
      ok: false,
      counterExample: `${describe(doubled)}: order ${doubled.orderId} has 2 rows`,
    };
  // Reconciliation's lostWrites: acknowledged sales a segment lost in a failover (their rows
  // exist: the queue is on another shard; their units counted as stock again)
  const listed = new Set(final.reconcileLost);
  const acked = new Set<string>();
  for (const h of history)
    if ((h.type === 'purchase' && h.outcome === 'ok') || (h.type === 'resolve' && h.orderId))
      if (h.orderId) acked.add(h.orderId);
  const stranger = final.reconcileLost.find((id) => !acked.has(id));
  if (stranger)
    return {
      name: 'no-lost-ack',
      ok: false,
      counterExample: `reconciliation lists ${stranger}, not an acknowledged sale`,
    };
  const lost = new Set([...missing.map((m) => m.orderId ?? ''), ...listed]).size;
  if (lost === 0) return { name: 'no-lost-ack', ok: true, lost: 0 };
  if (final.durable) {
    const first = missing[0];
    return {
      name: 'no-lost-ack',
      ok: false,
      counterExample: first
        ? `${describe(first)}: acknowledged order ${first.orderId} has no row`
        : `durable mode, yet reconciliation lists ${final.reconcileLost[0]} as lost`,
      lost,
    };
  }
  // default mode: a failover may lose acknowledged sales; each is one reconciliation names, or
  // one whose sale and queued job were both written to a master killed before replicating them
  const unlisted = missing.filter((m) => !listed.has(m.orderId ?? ''));
  const inKilled = (slot: number | undefined) =>
    slot !== undefined && (final.killed?.slots ?? []).some(([lo, hi]) => slot >= lo && slot <= hi);
  const untraceable = (m: PurchaseOp) =>
    inKilled(final.killed?.homeSlotOf[m.orderId ?? '']) && inKilled(final.killed?.queueSlot);
  const traceless = unlisted.filter(untraceable).length;
  const traced = unlisted.find((m) => !untraceable(m));
  if (traced) {
    const where = final.killed
      ? ` (home segment's slot ${final.killed.homeSlotOf[traced.orderId ?? ''] ?? '?'}, queue's slot ${final.killed.queueSlot}: not both on a killed master)`
      : ' (no master was killed after a replication lag)';
    return {
      name: 'no-lost-ack',
      ok: false,
      counterExample: `${describe(traced)}: lost, not named by reconciliation${where}`,
      lost,
      named: listed.size,
      traceless,
    };
  }
  return { name: 'no-lost-ack', ok: true, lost, named: listed.size, traceless };
}

function unknownResolvedOnce(history: HistoryEntry[], final: FinalState): InvariantResult {
  const answers = new Map<number, ResolveOp[]>();
  for (const h of history)
    if (h.type === 'resolve') answers.set(h.op, [...(answers.get(h.op) ?? []), h]);
  const rowsByKey = new Map<string, number>();
  for (const o of final.orders)
    rowsByKey.set(o.idempotencyKey, (rowsByKey.get(o.idempotencyKey) ?? 0) + 1);
  for (const p of purchases(history)) {
    if (p.outcome !== 'unknown') continue;
    const got = answers.get(p.op) ?? [];
    if (got.length !== 1)
      return {
        name: 'unknown-resolved-once',
        ok: false,
        counterExample: `${describe(p)}: ${got.length} answers (${got.map((g) => g.answer).join(', ') || 'none'})`,
      };
    const answer = got[0]!;
    if (answer.answer === 'none' && (rowsByKey.get(p.key) ?? 0) > 0)
      return {
        name: 'unknown-resolved-once',
        ok: false,
        counterExample: `${describe(p)}: answered 'no order' but an order row has its key`,
      };
  }
  return { name: 'unknown-resolved-once', ok: true };
}

function noDuplicate(history: HistoryEntry[], final: FinalState): InvariantResult {
  // one key, one answer: every 202 for a key names the same order
  const okByKey = new Map<string, PurchaseOp>();
  for (const p of purchases(history)) {
    if (p.outcome !== 'ok') continue;
    const seen = okByKey.get(p.key);
    if (seen && seen.orderId !== p.orderId)
      return {
        name: 'no-duplicate',
        ok: false,
        counterExample: `${describe(p)}: order ${p.orderId}, but op ${seen.op} got ${seen.orderId} for the key`,
      };
    okByKey.set(p.key, p);
  }
  const byKey = new Map<string, OrderRow>();
  for (const o of final.orders) {
    const seen = byKey.get(o.idempotencyKey);
    if (seen) {
      const op = purchases(history).find((h) => h.key === o.idempotencyKey);
      return {
        name: 'no-duplicate',
        ok: false,
        counterExample: `key ${o.idempotencyKey} user ${o.user}${op ? ` (op ${op.op})` : ''}: orders ${seen.id} and ${o.id}`,
      };
    }
    byKey.set(o.idempotencyKey, o);
  }
  const limits = new Map(final.products.map((p) => [p.id, p.limitPerUser]));
  const units = new Map<string, number>();
  // a lost order's marker went with it: its buyer could buy again (default mode's loss)
  const lost = lostOrders(history, final);
  for (const o of final.orders) {
    if (o.status === 'cancelled' || o.status === 'expired' || lost.has(o.id)) continue;
    const k = `${o.product}\u0000${o.user}`;
    units.set(k, (units.get(k) ?? 0) + o.quantity);
    if ((units.get(k) ?? 0) > (limits.get(o.product) ?? Infinity))
      return {
        name: 'no-duplicate',
        ok: false,
        counterExample: `user ${o.user} key ${o.idempotencyKey}: ${units.get(k)} units of ${o.product} > limit ${limits.get(o.product)}`,
      };
  }
  return { name: 'no-duplicate', ok: true };
}

function conservation(final: FinalState): InvariantResult {
  for (const p of final.products) {
    // a lost write's units are both sold and back in stock: they count twice
    const sum = p.remaining + p.sold + p.held + p.restocked;
    if (sum !== p.seeded + (p.lostUnits ?? 0))
      return {
        name: 'conservation',
        ok: false,
        counterExample: `product ${p.id}: seeded ${p.seeded} != remaining ${p.remaining} + sold ${p.sold} + held ${p.held} + restocked ${p.restocked}`,
      };
  }
  if (!final.reconcileOk)
    return { name: 'conservation', ok: false, counterExample: 'reconcile did not say ok' };
  return { name: 'conservation', ok: true };
}

function restockOnce(history: HistoryEntry[], final: FinalState): InvariantResult {
  const late = final.orders.filter(
    (o) => o.restocks === 1 && (o.returnDelayMs ?? 0) > LATE_RETURN_MS,
  );
  const longest = late.reduce<OrderRow | undefined>(
    (a, o) => (a && a.returnDelayMs! >= o.returnDelayMs! ? a : o),
    undefined,
  );
  for (const o of final.orders) {
    const closed = o.status === 'cancelled' || o.status === 'expired';
    const want = closed ? 1 : 0;
    if (o.restocks !== want) {
      const op = purchases(history).find((h) => h.orderId === o.id);
      const what =
        closed && o.restocks === 0 ? ' (a lost return: not back after the settle phase)' : '';
      return {
        name: 'restock-once',
        ok: false,
        counterExample: `order ${o.id} user ${o.user} key ${o.idempotencyKey}${op ? ` (op ${op.op})` : ''}: ${o.status}, restocked ${o.restocks} times${what}`,
      };
    }
  }
  return {
    name: 'restock-once',
    ok: true,
    ...(longest && {
      late: { count: late.length, longestMs: longest.returnDelayMs!, orderId: longest.id },
    }),
  };
}

/** An acknowledged payment ends paid, an acknowledged cancel ends cancelled: never both. */
function paymentWindow(history: HistoryEntry[], final: FinalState): InvariantResult {
  const status = new Map(final.orders.map((o) => [o.id, o.status]));
  const acked = new Map<string, SettleOp>();
  for (const h of history) {
    if ((h.type !== 'pay' && h.type !== 'cancel') || h.outcome !== 'ok') continue;
    const other = acked.get(h.orderId);
    const say = (x: SettleOp) => `${x.type} op ${x.op} user ${x.user} order ${x.orderId}`;
    if (other && other.type !== h.type)
      return {
        name: 'payment-window',
        ok: false,
        counterExample: `${say(h)} and ${say(other)} were both acknowledged`,
      };
    acked.set(h.orderId, h);
    const want = h.type === 'pay' ? 'paid' : 'cancelled';
    if (status.get(h.orderId) !== want)
      return {
        name: 'payment-window',
        ok: false,
        counterExample: `${say(h)} acknowledged, but the order ends ${status.get(h.orderId) ?? 'without a row'}`,
      };
  }
  return { name: 'payment-window', ok: true };
}

/** One API process asked for a purchase of one product once the faults had healed. */
export interface AfterFaultsProbe {
  api: number;
  product: string;
  /** its tries, in order (a try that got no HTTP answer at all has status 0) */
  tries: PurchaseOp[];
}

/**
 * Liveness once every fault has healed: each API process answers a purchase of each product
 * (any HTTP answer: a refusal or a 503 is an answer, a timeout or a reset is not) within its
 * tries. A process that kept a product's purchases unanswered after the faults (an await that
 * never settles) passed every other check while its shoppers got nothing: the resolver's tries
 * alternate between processes, so the other one answered for it.
 */
export function answersAfterFaults(probes: AfterFaultsProbe[]): InvariantResult {
  const silent = probes.find((p) => p.tries.length === 0 || p.tries.every((t) => t.status === 0));
  if (!silent) return { name: 'answers-after-faults', ok: true };
  const last = silent.tries.at(-1);
  return {
    name: 'answers-after-faults',
    ok: false,
    counterExample: `API process ${silent.api} answered no purchase of ${silent.product} in ${silent.tries.length} tries after the faults${last ? `, the last one ${describe(last)}` : ''}`,
  };
}

/** Every invariant, in the issue's order; the run fails when any is not ok. */
export function check(history: HistoryEntry[], final: FinalState): InvariantResult[] {
  return [
    noOversell(history, final),
    noLostAck(history, final),
    unknownResolvedOnce(history, final),
    noDuplicate(history, final),
    conservation(final),
    restockOnce(history, final),
    paymentWindow(history, final),
  ];
}
