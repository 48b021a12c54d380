/**
 * The arithmetic of `npm run bench:hotkey`: where a product's segments land as masters are added,
 * and the ceiling of one product's sales a second that follows from the busiest master's cost.
 * Pure (tested in test/bench/hotkey-model.test.ts).
 *
 * A sale takes one segment, so a master holding k of a product's N segments serves k/N of its
 * sales. If a sale costs a master u µs of CPU, that master is busy u * k/N µs per sale of the
 * product, and the product sells at most 1e6 / (u * k/N) a second before that master is full.
 * One segment (global) has k = N = 1 on whichever master holds it, however many there are.
 */
import calculateSlot from 'cluster-key-slot';
import { spreadTag } from '../../src/redis/spread.js';

const SLOTS = 16_384;

/** Master holding `slot` when `masters` masters hold even slot ranges (as `up` splits them). */
export const ownerOf = (slot: number, masters: number) => Math.floor((slot * masters) / SLOTS);

/** How many of the product's segments each of `masters` masters holds (spread tags). */
export function segmentsPerMaster(productId: string, segments: number, masters: number): number[] {
  const per = new Array<number>(masters).fill(0);
  for (let i = 0; i < segments; i++)
    per[ownerOf(calculateSlot(spreadTag(productId, i)), masters)]!++;
  return per;
}

/** The busiest master's segments of the product. */
export const busiestSegments = (productId: string, segments: number, masters: number) =>
  Math.max(...segmentsPerMaster(productId, segments, masters));

/** The busiest master's share of all masters' CPU (1 / masters is even). */
export function busiestShare(usPerMaster: number[]): number {
  const sum = usPerMaster.reduce((a, b) => a + b, 0);
  return sum === 0 ? 0 : Math.round((Math.max(...usPerMaster) / sum) * 100) / 100;
}

/**
 * Microseconds a master spends per sale it serves, from a run where a master spent `usPerSale`
 * per sale of the product while holding `heldSegments` of its `segments`.
 */
export const usPerServedSale = (usPerSale: number, heldSegments: number, segments: number) =>
  (usPerSale * segments) / heldSegments;

/**
 * A run's per-master cost split in two: what follows the segments (µs per sale a master serves,
 * from the masters without the order queue) and what the order queue's master adds per sale of
 * any product (BullMQ's keys share one hash tag: one master, however many there are). When only
 * the queue's master holds segments (a global product placed there), the two cannot be told apart:
 * `queue` is then undefined and `perServed` includes it.
 */
export function splitCosts(
  usPerMaster: number[],
  held: number[],
  segments: number,
  queueMaster: number,
): { perServed: number; queue: number | undefined } {
  let us = 0;
  let share = 0;
  usPerMaster.forEach((u, i) => {
    if (i === queueMaster || held[i] === 0) return;
    us += u;
    share += held[i]! / segments;
  });
  if (share === 0) {
    return {
      perServed: usPerServedSale(usPerMaster[queueMaster]!, held[queueMaster]!, segments),
      queue: undefined,
    };
  }
  const perServed = us / share;
  const queue = usPerMaster[queueMaster]! - (perServed * held[queueMaster]!) / segments;
  return { perServed, queue: Math.max(0, queue) };
}

/** Sales a second of one product before its busiest master is full. */
export function ceiling(usPerServed: number, heldSegments: number, segments: number): number {
  return usPerServed <= 0 ? 0 : Math.round(1e6 / ((usPerServed * heldSegments) / segments));
}

export interface CeilingRow {
  masters: number;
  /** the busiest master's segments of the segmented product */
  busiestSegments16: number;
  global: number;
  segmented16: number;
}

/**
 * One product's ceiling as masters grow: global on one master whatever their number, segmented
 * N over the busiest master's share of its segments.
 */
export function ceilings(
  productId: string,
  segments: number,
  perServed: { global: number; segmented: number },
  masterCounts: number[],
): CeilingRow[] {
  return masterCounts.map((masters) => {
    const k = busiestSegments(productId, segments, masters);
    return {
      masters,
      busiestSegments16: k,
      global: ceiling(perServed.global, 1, 1),
      segmented16: ceiling(perServed.segmented, k, segments),
    };
  });
}
