/** The live dashboard's feed of one API process, and its gauge of viewers. */
import type { Queue } from 'bullmq';
import { Gauge } from 'prom-client';
import { DashboardRepository } from '../db/dashboard-repository.js';
import { DashboardFeed, type FairnessReports, type Transcripts } from '../services/index.js';
import { metricsText as registryText } from '../metrics.js';
import type { Core } from './core.js';

/**
 * The feed (started): products and their order rows, the order-persistence queue, the
 * process's counters (`metricsText`: several API processes' merged, when given), and the draw
 * and fairness panels when the process has those services.
 */
export function dashboardFeed(
  core: Core,
  queue: Queue | undefined,
  metricsText: ((names?: readonly string[]) => Promise<string>) | undefined,
  panels: { transcripts?: Transcripts | undefined; fairness?: FairnessReports | undefined } = {},
): DashboardFeed {
  const dashboardRows = new DashboardRepository(core.db);
  const { transcripts, fairness } = panels;
  const feed = new DashboardFeed({
    source: {
      productStates: (max) => core.productStore.states(max),
      orderGroups: (productIds) => dashboardRows.orderGroups(productIds),
      webhookBacklog: () => core.webhooks.backlog(),
      ...(transcripts && {
        transcript: async (id: string) => {
          const a = await transcripts.transcript(id);
          return a.kind === 'transcript' ? a.transcript : null;
        },
      }),
      ...(fairness && { fairness: (id: string) => fairness.report(id) }),
    },
    queue,
    metricsText: metricsText ?? ((names) => registryText(core.registry, names)),
  }).start();
  new Gauge({
    name: 'seckill_dashboard_viewers',
    help: 'Open /admin/dashboard/stream connections in this process',
    registers: [core.registry],
    collect() {
      this.set(feed.viewers);
    },
  });
  return feed;
}
