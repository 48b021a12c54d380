/**
 * A sale's fairness report on the feed (docs/fairness.md#on-the-feed): once the sale is final
 * (ended, or sold out for good), its orders hold every unit it sold and it has stayed so for
 * SETTLE_MS (the notes of the last refusals are written every FLUSH_MS: they are in), its report
 * goes out as one product event, `fairness.report`, with the report's fields. Its id names the sale epoch, so
 * a report published again (two sweeps, a crash between the write and the mark) is written once.
 */
import type { ProductEventInput } from '../../events/index.js';
import type { FairnessReport, FairnessReports } from './report.js';

export const FAIRNESS_EVENT_SOURCE = '/seckill/fairness';

/** How long a sale stays final before its report goes out: its last notes are written by then. */
export const SETTLE_MS = 5_000;

/** Clusters an event carries at most (most units first): an event is one bounded POST. */
export const EVENT_CLUSTERS = 100;

export interface FinalReportDeps {
  reports: Pick<FairnessReports, 'report'>;
  /** the products that may have a sale ending (the active set) */
  products: () => Promise<string[]>;
  /**
   * the sale's epoch, whether it is over (ended, or sold out for good) and the units it holds
   * sold now (sold less returned); null: unknown
   */
  unitsSold: (productId: string) => Promise<{ epoch: number; over: boolean; units: number } | null>;
  /** a sale whose report went out already */
  reported: {
    has(productId: string, epoch: number): Promise<boolean>;
    mark(productId: string, epoch: number): Promise<void>;
    /** when a sweep first saw the sale final (ms; the first call records now) */
    finalSince(productId: string, epoch: number, now: number): Promise<number>;
  };
  now?: () => number;
  publish: (events: ProductEventInput[]) => Promise<number>;
}

/** The report as its event: every field, the clusters cut to the first EVENT_CLUSTERS. */
export function fairnessEvent(report: FairnessReport): ProductEventInput {
  const { clusters, ...rest } = report;
  return {
    id: `fairness.report:${report.productId}:${report.epoch}`,
    productId: report.productId,
    type: 'fairness.report',
    subject: `${report.productId}/fairness/${report.epoch}`,
    data: {
      ...rest,
      clusters: clusters.slice(0, EVENT_CLUSTERS),
      clustersTotal: clusters.length,
    },
  };
}

/**
 * Publishes the report of each final sale not reported yet.
 * @returns the events written (0 when none was new)
 */
export async function publishFinalReports(deps: FinalReportDeps): Promise<number> {
  let written = 0;
  for (const productId of await deps.products()) {
    const sold = await deps.unitsSold(productId);
    // a sale still on is not read further: a report reads every note and order of its sale
    if (!sold?.over || (await deps.reported.has(productId, sold.epoch))) continue;
    const now = (deps.now ?? Date.now)();
    if (now - (await deps.reported.finalSince(productId, sold.epoch, now)) < SETTLE_MS) continue;
    const report = await deps.reports.report(productId);
    // every unit sold is in a persisted order: the figures will not move (the sale's state says
    // it is over; this process's view of it may not have heard the sell-out)
    if (!report || report.epoch !== sold.epoch || report.units !== sold.units) continue;
    written += await deps.publish([fairnessEvent({ ...report, final: true })]);
    await deps.reported.mark(productId, report.epoch);
  }
  return written;
}
