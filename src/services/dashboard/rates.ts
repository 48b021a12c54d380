/**
 * The dashboard's purchase rates, from plain counter samples: answers of `POST /seckill` by kind
 * (accepted, and each kind of refusal by its problem code), and their rates over a sliding window
 * of samples (10 s), so a quiet half-second between bursts does not read as a stopped sale.
 */
import { quantile, type Counters } from './metrics-text.js';

/** Refusals of a purchase by kind, each the problem codes it covers; `other` takes the rest. */
export const REFUSAL_KINDS = [
  { kind: 'soldOut', label: '409 sold out', codes: ['sold-out', 'insufficient-stock'] },
  {
    kind: 'limit',
    label: '409 limit per shopper',
    codes: ['limit-reached', 'purchase-in-progress', 'order-voided'],
  },
  { kind: 'rateLimited', label: '429 rate limited', codes: ['rate-limited'] },
  { kind: 'lockTimeout', label: '503 lock timeout', codes: ['lock-timeout'] },
  {
    kind: 'store',
    label: '503 store / shard down',
    codes: ['store-unavailable', 'shard-unavailable', 'outcome-pending'],
  },
  { kind: 'shed', label: '503 shed / draining', codes: ['overloaded', 'draining', 'reseeding'] },
  {
    kind: 'closed',
    label: 'not started / paused / ended',
    codes: ['not-started', 'sale-paused', 'ended'],
  },
  { kind: 'error', label: '500 internal error', codes: ['internal'] },
  { kind: 'other', label: 'other (bad input, token…)', codes: [] },
] as const;

export type RefusalKind = (typeof REFUSAL_KINDS)[number]['kind'];

export type ByKind = Record<RefusalKind, number>;

/** Cumulative counts of `POST /seckill` answers, summed over every API process. */
export interface SaleCounts {
  accepted: number;
  refusals: ByKind;
  /** cumulative latency buckets (le in seconds, count) */
  latency: Array<[number, number]>;
}

export interface Sample {
  at: number;
  counts: SaleCounts;
}

/** Per second over the window (its actual length in `seconds`: shorter while it fills). */
export interface WindowRates {
  seconds: number;
  accepted: number;
  refused: number;
  refusals: ByKind;
  /** ms over the window; null without requests */
  latency: { p50: number | null; p99: number | null };
}

const SECKILL = { method: 'POST', route: '/seckill' };

const zeroKinds = (): ByKind => Object.fromEntries(REFUSAL_KINDS.map((k) => [k.kind, 0])) as ByKind;

/** The counts of the merged /metrics text (http_requests_total, http_problems_total). */
/** The metrics {@link saleCounts} reads: all an idle sample asks for (no gauge is collected). */
export const SALE_COUNTERS = [
  'http_requests_total',
  'http_problems_total',
  'http_request_duration_seconds',
] as const;

export function saleCounts(counters: Counters): SaleCounts {
  const route = { route: SECKILL.route };
  const refusals = zeroKinds();
  let known = 0;
  for (const k of REFUSAL_KINDS) {
    for (const code of k.codes)
      refusals[k.kind] += counters.sum('http_problems_total', { ...route, code });
    known += refusals[k.kind];
  }
  refusals.other = Math.max(0, counters.sum('http_problems_total', route) - known);
  return {
    accepted: counters.sum('http_requests_total', { ...SECKILL, status: '202' }),
    refusals,
    latency: counters.buckets('http_request_duration_seconds', SECKILL),
  };
}

/** Growth of a counter; a counter that went down (an API process restarted) counts from 0. */
const growth = (now: number, then: number) => (now >= then ? now - then : now);

/** Rates between two samples of the same counters. */
export function ratesBetween(base: Sample, last: Sample): WindowRates {
  const seconds = Math.max(0, (last.at - base.at) / 1_000);
  const per = (now: number, then: number) => (seconds > 0 ? growth(now, then) / seconds : 0);
  const refusals = zeroKinds();
  for (const k of REFUSAL_KINDS) {
    refusals[k.kind] = per(last.counts.refusals[k.kind], base.counts.refusals[k.kind]);
  }
  const before = new Map(base.counts.latency);
  const delta = last.counts.latency.map(
    ([le, n]) => [le, growth(n, before.get(le) ?? 0)] as [number, number],
  );
  return {
    seconds,
    accepted: per(last.counts.accepted, base.counts.accepted),
    refused: Object.values(refusals).reduce((a, b) => a + b, 0),
    refusals,
    latency: { p50: quantile(delta, 0.5), p99: quantile(delta, 0.99) },
  };
}

/**
 * Samples of the last `windowMs`, and the rates over them: from the newest sample at least
 * `windowMs` old (or the oldest there is) to the newest.
 */
export class SlidingWindow {
  private samples: Sample[] = [];

  constructor(readonly windowMs: number) {}

  add(sample: Sample): WindowRates {
    this.samples.push(sample);
    const edge = sample.at - this.windowMs;
    let base = 0;
    while (base + 1 < this.samples.length && this.samples[base + 1]!.at <= edge) base++;
    this.samples = this.samples.slice(base);
    return ratesBetween(this.samples[0]!, sample);
  }

  clear(): void {
    this.samples = [];
  }
}
