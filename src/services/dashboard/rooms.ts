/**
 * The waiting rooms on the live dashboard: for each product with a room, the line (in line,
 * active seats, sold out while waiting), how fast it moves (admitted per second over the rate
 * window), its no-shows, whether it is paused, and its settings; and, for every room, how far the
 * estimates told at the joins were from the waits. Read from the merged /metrics text
 * (inventory/rooms/metrics.ts: the admitting process's gauges, the processes' counters) and the
 * products' states.
 */
import type { ProductState } from '../../inventory/index.js';
import type { Counters } from './metrics-text.js';

export interface DashboardRoom {
  productId: string;
  /** lobby (before the opening), open, paused, sold-out, ended */
  state: 'lobby' | 'open' | 'paused' | 'sold-out' | 'ended';
  inLine: number;
  /** seats taken: admitted and not yet done */
  active: number;
  maxActive: number;
  admitPerSecond: number;
  /** admitted per second over the rate window */
  admittedPerSecond: number;
  admitted: number;
  /** admissions that ran out unused */
  abandoned: number;
  /** shoppers in line while the product is sold out */
  soldOutWaiting: number;
}

export interface EstimateError {
  /** shoppers whose wait was compared with their estimate (a sample: docs/waiting-room.md) */
  observed: number;
  /** actual wait minus the p50 told, on average (s); null before any */
  meanSeconds: number | null;
  /** share of them within 10 s of it */
  within10s: number | null;
}

const ERROR = 'seckill_room_estimate_error_seconds';

function roomState(state: ProductState): DashboardRoom['state'] {
  if (state.status === 'ended') return 'ended';
  if (state.status === 'sold out') return 'sold-out';
  if (state.status === 'upcoming') return 'lobby';
  return state.paused ? 'paused' : 'open';
}

/** Admitted per second of each room, over a window of samples of its counter. */
export class RoomRates {
  private readonly samples = new Map<string, Array<{ at: number; admitted: number }>>();

  constructor(private readonly windowMs: number) {}

  rate(productId: string, at: number, admitted: number): number {
    let list = this.samples.get(productId);
    if (!list) this.samples.set(productId, (list = []));
    list.push({ at, admitted });
    while (list.length > 2 && list[0]!.at < at - this.windowMs) list.shift();
    const first = list[0]!;
    const seconds = (at - first.at) / 1_000;
    // a counter that went down (a process restarted) counts from 0
    const grew = admitted >= first.admitted ? admitted - first.admitted : admitted;
    return seconds > 0 ? grew / seconds : 0;
  }

  /** Forgets rooms no longer shown. */
  keep(productIds: ReadonlySet<string>): void {
    for (const id of this.samples.keys()) if (!productIds.has(id)) this.samples.delete(id);
  }
}

export function dashboardRooms(
  states: readonly ProductState[],
  counters: Counters,
  rates: RoomRates,
  at: number,
): DashboardRoom[] {
  const rooms = states.filter((s) => s.waitingRoom !== null);
  rates.keep(new Set(rooms.map((s) => s.productId)));
  return rooms.map((s) => {
    const product = { product: s.productId };
    const admitted = counters.sum('seckill_room_admitted_total', product);
    return {
      productId: s.productId,
      state: roomState(s),
      inLine: counters.max('seckill_room_waiting', product),
      active: counters.max('seckill_room_active', product),
      maxActive: s.waitingRoom!.maxActive,
      admitPerSecond: s.waitingRoom!.admitPerSecond,
      admittedPerSecond: rates.rate(s.productId, at, admitted),
      admitted,
      abandoned: counters.sum('seckill_room_abandoned_total', product),
      soldOutWaiting: counters.max('seckill_room_sold_out_waiting', product),
    };
  });
}

export function estimateError(counters: Counters): EstimateError {
  const observed = counters.sum(`${ERROR}_count`, {});
  if (observed === 0) return { observed, meanSeconds: null, within10s: null };
  const at = (le: number) => counters.buckets(ERROR, {}).find(([bound]) => bound === le)?.[1] ?? 0;
  return {
    observed,
    meanSeconds: counters.sum(`${ERROR}_sum`, {}) / observed,
    within10s: (at(10) - at(-10)) / observed,
  };
}
