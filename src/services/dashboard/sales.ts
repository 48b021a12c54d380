/**
 * What the dashboard shows of each sale, from plain data: the product as it stands in Redis and
 * its order rows' figures from PostgreSQL. Segments go out as parallel arrays (a 1,024-segment
 * product is a few kB a tick, not 60), and sales in the order a person looks for them: live, then
 * upcoming (soonest first), then sold out, then ended ones, folded.
 */
import type { ProductState } from '../../inventory/index.js';

/** One group of order rows (one status of a product's epoch), as the feed's query returns it. */
export interface OrderGroup {
  productId: string;
  epoch: number;
  status: string;
  units: number;
  /** deducted_at of the group's first and last order (ms, Redis time of the deduct) */
  firstAt: number;
  lastAt: number;
}

export interface DashboardSale {
  productId: string;
  epoch: number;
  status: ProductState['status'];
  total: number;
  remaining: number;
  /** units sold, returned ones included (as GET /admin/products/:id) */
  sold: number;
  returned: number;
  /** ms; null: from the seed on / open-ended */
  startsAt: number | null;
  endsAt: number | null;
  /**
   * Sold out: ms from the start (startsAt, or the first sale when the sale had none or it sold
   * before it) to its last sale; null until every order of the sale is persisted.
   */
  soldOutAfterMs: number | null;
  soldOutFrom: 'start' | 'first sale' | null;
  /** units of the current sale's order rows by state: final, awaiting_payment, paid, ... */
  orders: Record<string, number>;
  /** orders in the segments' outboxes, not yet confirmed persisted */
  backlog: number;
  /** an ended sale: shown folded */
  folded: boolean;
  /** per segment, by index */
  segments: {
    stock: number[];
    sold: number[];
    returned: number[];
    /** index into `shards` (Redis Cluster), empty on one Redis */
    shard: number[];
    /** segments whose shard did not answer */
    unreachable: number[];
  };
  shards: string[];
}

const RANK: Record<ProductState['status'], number> = {
  live: 0,
  paused: 0,
  upcoming: 1,
  'sold out': 2,
  ended: 3,
};

/** Live first, then upcoming by start, then sold out, then ended; by id within each. */
export function bySaleOrder(a: DashboardSale, b: DashboardSale): number {
  return (
    RANK[a.status] - RANK[b.status] ||
    (a.status === 'upcoming' ? (a.startsAt ?? 0) - (b.startsAt ?? 0) : 0) ||
    a.productId.localeCompare(b.productId)
  );
}

function compactSegments(state: ProductState): Pick<DashboardSale, 'segments' | 'shards'> {
  const shards = [...new Set(state.segments.flatMap((s) => (s.shard ? [s.shard] : [])))].sort();
  const index = new Map(shards.map((s, i) => [s, i]));
  return {
    segments: {
      stock: state.segments.map((s) => s.stock),
      sold: state.segments.map((s) => s.sold),
      returned: state.segments.map((s) => s.returned),
      shard: shards.length ? state.segments.map((s) => (s.shard ? index.get(s.shard)! : -1)) : [],
      unreachable: state.segments.flatMap((s) => (s.unreachable ? [s.segment] : [])),
    },
    shards,
  };
}

/** How long the sale took to sell out, once its orders are all persisted (null otherwise). */
function soldOutAfter(
  state: ProductState,
  backlog: number,
  groups: OrderGroup[],
): Pick<DashboardSale, 'soldOutAfterMs' | 'soldOutFrom'> {
  if (!state.soldOut || backlog > 0 || groups.length === 0) {
    return { soldOutAfterMs: null, soldOutFrom: null };
  }
  const first = Math.min(...groups.map((g) => g.firstAt));
  const last = Math.max(...groups.map((g) => g.lastAt));
  const fromStart = state.startsAt > 0 && state.startsAt <= first;
  return {
    soldOutAfterMs: last - (fromStart ? state.startsAt : first),
    soldOutFrom: fromStart ? 'start' : 'first sale',
  };
}

/** A product's dashboard view; `groups`: order groups of any product (its own are picked). */
export function dashboardSale(state: ProductState, groups: OrderGroup[]): DashboardSale {
  const own = groups.filter((g) => g.productId === state.productId && g.epoch === state.epoch);
  const orders: Record<string, number> = {};
  for (const g of own) orders[g.status] = (orders[g.status] ?? 0) + g.units;
  const backlog = state.segments.reduce((a, s) => a + s.pending, 0);
  return {
    productId: state.productId,
    epoch: state.epoch,
    status: state.status,
    total: state.total,
    remaining: state.remaining,
    sold: state.sold,
    returned: state.returned,
    startsAt: state.startsAt || null,
    endsAt: state.endsAt || null,
    ...soldOutAfter(state, backlog, own),
    orders,
    backlog,
    folded: state.status === 'ended',
    ...compactSegments(state),
  };
}
