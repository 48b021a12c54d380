/**
 * What the live dashboard shows, one snapshot per tick (~2 a second) shared by every viewer of
 * this process, and none while nobody watches; the charts' recent past (the last 2 minutes of
 * rates) is kept meanwhile from the counters alone, so a page opened mid-sale starts with it.
 * Aggregated across API processes: stock and
 * segments come from Redis, order figures from PostgreSQL, and rates from the merged /metrics
 * text (every API process's counters when API_PROCESSES > 1), over a sliding window of ticks.
 * The computing is in dashboard-rates.ts and dashboard-sales.ts; this file reads the stores
 * through its port ({@link DashboardFeedSource}).
 */
import type { Queue } from 'bullmq';
import type { ProductState } from '../../inventory/index.js';
import { parseMetrics } from './metrics-text.js';
import {
  REFUSAL_KINDS,
  SALE_COUNTERS,
  saleCounts,
  SlidingWindow,
  type ByKind,
  type WindowRates,
} from './rates.js';
import { bySaleOrder, dashboardSale, type DashboardSale, type OrderGroup } from './sales.js';
import {
  drawPanel,
  fairnessPanel,
  PanelCache,
  type DashboardDraw,
  type DashboardFairness,
  type DrawTranscriptView,
  type FairnessReportView,
} from './panels.js';
import {
  dashboardRooms,
  estimateError,
  RoomRates,
  type DashboardRoom,
  type EstimateError,
} from './rooms.js';

/** Products shown: the active ones staying longest (upcoming, live, just sold from), by id. */
const MAX_PRODUCTS = 20;

/** Rates are over this much of the recent past: a pause between bursts is not a stop. */
export const RATE_WINDOW_MS = 10_000;

/** How far back the charts reach; a viewer who opens the page gets this much at once. */
export const HISTORY_MS = 120_000;

/**
 * While nobody watches, the rates are sampled this often (the merged /metrics text only: no
 * product, order or queue reads); while someone does, every tick is a point.
 */
export const IDLE_SAMPLE_MS = 2_000;

/** One point of the charts: the window's rates at `at`. */
export interface RatePoint {
  at: number;
  accepted: number;
  refusals: ByKind;
}

/** What a viewer gets first: the charts' recent past, oldest first. */
export interface DashboardHistory {
  spanMs: number;
  points: RatePoint[];
}

export interface DashboardSnapshot {
  at: number;
  /** live, upcoming, sold out, then ended (folded) */
  products: DashboardSale[];
  /** the products with a waiting room: each line as it stands (dashboard-rooms.ts) */
  rooms: DashboardRoom[];
  /** how far every room's estimates were from the waits */
  estimateError: EstimateError;
  /** POST /seckill per second over the window (`rates.seconds` long) */
  rates: WindowRates;
  /** POST /seckill answers since the API processes started */
  totals: { accepted: number; refusals: ByKind };
  /** the refusal kinds, in the order the page lists them */
  kinds: Array<{ kind: string; label: string }>;
  /** the order-persistence queue (BullMQ): orders on their way to PostgreSQL */
  queue: Record<string, number>;
  outboxBacklog: number;
  persistedTotal: number;
  /** events webhook endpoints have not acknowledged, and dead-lettered; null: unknown */
  webhooks: WebhookBacklog | null;
  /** the draw products' draws (panels.ts), read every PANEL_REFRESH_MS */
  draws: DashboardDraw[];
  /** each shown sale's fairness report, read every PANEL_REFRESH_MS; ended sales left out */
  fairness: DashboardFairness[];
}

/** Every webhook endpoint's backlog, summed (lanes with events pending, dead-lettered). */
export interface WebhookBacklog {
  pending: number;
  deadLetters: number;
}

/** What the feed reads: product states from Redis, order groups from PostgreSQL. */
export interface DashboardFeedSource {
  /** up to `max` active products, by id (inventory's ProductStore) */
  productStates(max: number): Promise<ProductState[]>;
  /** the order rows of these products summed per sale and status (the dashboard repository) */
  orderGroups(productIds: readonly string[]): Promise<OrderGroup[]>;
  /** the webhook endpoints' backlog (their service) */
  webhookBacklog?: () => Promise<WebhookBacklog>;
  /** a draw product's public transcript (the draw's service); null: not a draw */
  transcript?: (productId: string) => Promise<DrawTranscriptView | null>;
  /** a sale's fairness report (the fairness service); null: unknown product */
  fairness?: (productId: string) => Promise<FairnessReportView | null>;
}

export interface DashboardFeedDeps {
  source: DashboardFeedSource;
  queue?: Queue | undefined;
  /**
   * The metrics text (several API processes' merged); `names`: only those metrics, none of the
   * gauges that read the stores (an idle sample must cost Redis nothing)
   */
  metricsText: (names?: readonly string[]) => Promise<string>;
  intervalMs?: number;
  windowMs?: number;
  /** ms between the rate samples taken while nobody watches (after start()); IDLE_SAMPLE_MS */
  idleSampleMs?: number;
  /** ms between two reads of a product's draw and fairness panels (PANEL_REFRESH_MS) */
  panelRefreshMs?: number;
  /** ms; tests step it */
  clock?: () => number;
}

const KINDS = REFUSAL_KINDS.map(({ kind, label }) => ({ kind, label }));

export class DashboardFeed {
  private readonly listeners = new Map<(s: DashboardSnapshot) => void, () => void>();
  private timer: NodeJS.Timeout | undefined;
  private readonly window: SlidingWindow;
  private readonly roomRates: RoomRates;
  private ticking = false;
  private points: RatePoint[] = [];
  private idle: NodeJS.Timeout | undefined;
  private sampling = false;
  private readonly draws: PanelCache<DashboardDraw>;
  private readonly fairness: PanelCache<DashboardFairness>;

  constructor(private readonly deps: DashboardFeedDeps) {
    this.window = new SlidingWindow(deps.windowMs ?? RATE_WINDOW_MS);
    this.roomRates = new RoomRates(deps.windowMs ?? RATE_WINDOW_MS);
    const { transcript, fairness } = deps.source;
    this.draws = new PanelCache(async (id) => {
      const read = transcript && (await transcript(id));
      return read ? drawPanel(read) : null;
    }, deps.panelRefreshMs);
    this.fairness = new PanelCache(async (id) => {
      const read = fairness && (await fairness(id));
      return read ? fairnessPanel(read) : null;
    }, deps.panelRefreshMs);
  }

  /**
   * Calls `listener` with every snapshot until the returned function is called; `end` when the
   * feed closes (shutdown), so the viewer's stream can end.
   */
  subscribe(listener: (s: DashboardSnapshot) => void, end: () => void = () => {}): () => void {
    this.listeners.set(listener, end);
    if (!this.timer) {
      this.timer = setInterval(() => void this.tick(), this.deps.intervalMs ?? 500);
      this.timer.unref();
      void this.tick();
    }
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) this.stop();
    };
  }

  /** Keeps the charts' recent past while nobody watches, until close(). */
  start(): this {
    this.idle ??= setInterval(() => void this.sample(), this.deps.idleSampleMs ?? IDLE_SAMPLE_MS);
    this.idle.unref();
    return this;
  }

  /** The last HISTORY_MS of rate points, oldest first (what a new viewer's charts start with). */
  history(): DashboardHistory {
    return { spanMs: HISTORY_MS, points: [...this.points] };
  }

  /**
   * One rate point from the counters alone, unless a viewer's ticks are taking them; a failed
   * read is skipped (the next one tries again).
   */
  async sample(): Promise<void> {
    if (this.timer || this.sampling) return;
    this.sampling = true;
    try {
      const at = (this.deps.clock ?? Date.now)();
      const counts = saleCounts(parseMetrics(await this.deps.metricsText(SALE_COUNTERS)));
      this.remember(at, this.window.add({ at, counts }));
    } catch {
      // the metrics text away for a moment: a gap in the chart
    } finally {
      this.sampling = false;
    }
  }

  private remember(at: number, rates: WindowRates): void {
    this.points.push({ at, accepted: rates.accepted, refusals: rates.refusals });
    const edge = at - HISTORY_MS;
    let old = 0;
    while (old < this.points.length && this.points[old]!.at < edge) old++;
    if (old > 0) this.points = this.points.slice(old);
  }

  /** Open dashboard streams in this process. */
  get viewers(): number {
    return this.listeners.size;
  }

  /** Shutdown: every viewer's stream ends. */
  close(): void {
    const ends = [...this.listeners.values()];
    this.listeners.clear();
    clearInterval(this.idle);
    this.idle = undefined;
    this.stop();
    for (const end of ends) end();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    // sampled on while nobody watches; otherwise the next viewer's rates start afresh
    if (!this.idle) this.window.clear();
  }

  private async tick(): Promise<void> {
    if (this.ticking) return; // a slow store: skip a tick rather than pile them up
    this.ticking = true;
    try {
      const s = await this.snapshot();
      for (const l of this.listeners.keys()) l(s);
    } catch {
      // a store away for a moment: the next tick tries again (the page shows the last one)
    } finally {
      this.ticking = false;
    }
  }

  async snapshot(): Promise<DashboardSnapshot> {
    const at = (this.deps.clock ?? Date.now)();
    const counters = parseMetrics(await this.deps.metricsText());
    const counts = saleCounts(counters);
    const rates = this.window.add({ at, counts });
    this.remember(at, rates);
    const states = await this.deps.source.productStates(MAX_PRODUCTS);
    const products = await this.products(states);
    return {
      at,
      products,
      rooms: dashboardRooms(states, counters, this.roomRates, at),
      estimateError: estimateError(counters),
      rates,
      totals: { accepted: counts.accepted, refusals: counts.refusals },
      kinds: KINDS,
      queue: this.deps.queue
        ? await this.deps.queue.getJobCounts('waiting', 'active', 'delayed', 'failed')
        : {},
      outboxBacklog: products.reduce((a, p) => a + p.backlog, 0),
      persistedTotal: products.reduce(
        (a, p) => a + Object.values(p.orders).reduce((x, y) => x + y, 0),
        0,
      ),
      webhooks: (await this.deps.source.webhookBacklog?.().catch(() => null)) ?? null,
      draws: await this.draws.of(
        states.filter((st) => st.draw).map((st) => st.productId),
        at,
      ),
      fairness: await this.fairness.of(
        products.filter((p) => !p.folded).map((p) => p.productId),
        at,
      ),
    };
  }

  /** The stores' part: product states from Redis, order groups from PostgreSQL. */
  private async products(states: ProductState[]): Promise<DashboardSale[]> {
    const groups = await this.deps.source.orderGroups(states.map((s) => s.productId));
    return states.map((s) => dashboardSale(s, groups)).sort(bySaleOrder);
  }
}
