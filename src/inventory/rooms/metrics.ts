/**
 * The waiting rooms' metrics (docs/waiting-room.md#metrics). The line's gauges are those of the
 * process that ticked the room last (one that hears another tick it under a newer lease drops
 * its own: read them with max); the counters add up over processes.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { ProductView } from '../catalogue/catalogue.js';
import type { AdmitTick } from './store.js';

export interface RoomMetrics {
  ticked(view: ProductView, tick: AdmitTick & { code: 'ticked' }): void;
  /** another process ticks the room now: this one's gauges of it go (max reads the holder's) */
  superseded(productId: string): void;
  joined(): void;
  refusedFull(productId: string): void;
  refusedShort(productId: string): void;
  admitted(waitedS: number, predictedS: number): void;
}

export function promRoomMetrics(registry: Registry): RoomMetrics {
  const registers = [registry];
  const labelNames = ['product'] as const;
  const waiting = new Gauge({
    name: 'seckill_room_waiting',
    help: 'Shoppers in line, not yet admitted (the admitting process)',
    labelNames,
    registers,
  });
  const active = new Gauge({
    name: 'seckill_room_active',
    help: 'Shoppers admitted and not yet done: neither bought nor expired (the admitting process)',
    labelNames,
    registers,
  });
  const soldOutWaiting = new Gauge({
    name: 'seckill_room_sold_out_waiting',
    help: 'Shoppers in line while the product is sold out (told sold-out on their next poll)',
    labelNames,
    registers,
  });
  const admittedTotal = new Counter({
    name: 'seckill_room_admitted_total',
    help: 'Shoppers admitted (rate(): admitted per second)',
    labelNames,
    registers,
  });
  const abandoned = new Counter({
    name: 'seckill_room_abandoned_total',
    help: 'Admissions that ran out unused (no-shows): their seats went to the next in line',
    labelNames,
    registers,
  });
  const joins = new Counter({
    name: 'seckill_room_joins_total',
    help: 'Places taken in waiting rooms (a shopper joining again is not counted)',
    registers,
  });
  const full = new Counter({
    name: 'seckill_room_full_refusals_total',
    help: 'New shoppers refused a place: the line held ROOM_MAX_PLACES already (409 room-full)',
    labelNames,
    registers,
  });
  const short = new Counter({
    name: 'seckill_room_memory_refusals_total',
    help: "New shoppers refused a place: the room's Redis was near its maxmemory (503 room-store-full)",
    labelNames,
    registers,
  });
  const waited = new Histogram({
    name: 'seckill_room_wait_seconds',
    help: 'Time in queue, join to admission (seen by the process that answered the join)',
    buckets: [1, 5, 15, 30, 60, 120, 300, 600, 1_200, 1_800, 3_600],
    registers,
  });
  const error = new Histogram({
    name: 'seckill_room_estimate_error_seconds',
    help: 'Actual wait minus the p50 estimate given at the join (negative: admitted early)',
    buckets: [-600, -120, -30, -10, -3, 0, 3, 10, 30, 120, 600],
    registers,
  });
  return {
    ticked(view, tick) {
      const product = view.id;
      const inLine = Math.max(0, tick.next - tick.served);
      waiting.set({ product }, inLine);
      active.set({ product }, tick.active);
      soldOutWaiting.set({ product }, view.soldOut || view.soldOutMarked ? inLine : 0);
      if (tick.admitted > 0) admittedTotal.inc({ product }, tick.admitted);
      if (tick.expired > 0) abandoned.inc({ product }, tick.expired);
    },
    superseded(product) {
      for (const gauge of [waiting, active, soldOutWaiting]) gauge.remove({ product });
    },
    joined: () => joins.inc(),
    refusedFull: (product) => full.inc({ product }),
    refusedShort: (product) => short.inc({ product }),
    admitted(waitedS, predictedS) {
      waited.observe(waitedS);
      error.observe(waitedS - predictedS);
    },
  };
}
