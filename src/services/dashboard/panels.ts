/**
 * The dashboard's two slow panels (docs/dashboard.md): a draw's (entries, the freeze, the beacon
 * and the draw, the cascade) from its public transcript, and each sale's fairness (E, F, U, u_F,
 * mu, its band, A, the top 1 %'s share, the clusters) from its fairness report. Both read every
 * entry or every identity of a sale, so they are read again every PANEL_REFRESH_MS, not at every
 * tick, and a tick shows the last read.
 */

/** What the draw panel reads of a draw's public transcript (the draw room's `Transcript`). */
export interface DrawTranscriptView {
  productId: string;
  epoch: number;
  state: 'upcoming' | 'open' | 'closed' | 'frozen' | 'drawn';
  entriesCloseAt: string;
  entries: number;
  root: string | null;
  removed: number | null;
  round: number | null;
  roundAt: string | null;
  beacon: { randomness: string } | null;
  frozenAt: string | null;
  drawnAt: string | null;
  winners: readonly string[];
  offered: number;
  bought: readonly string[];
}

/** What the fairness panel reads of a sale's report (the fairness room's `FairnessReport`). */
export interface FairnessReportView {
  productId: string;
  epoch: number;
  mode: 'room' | 'plain';
  final: boolean;
  identities: number;
  flagged: number;
  units: number;
  flaggedUnits: number;
  fairShare: number;
  band: [number, number];
  advantage: number | null;
  advantageBand: [number, number] | null;
  top1PercentShare: number;
  clusters: Array<{ by: string; key: string; identities: number; units: number }>;
  rulesChanged: boolean;
}

/** How often a product's draw and fairness are read again while someone watches. */
export const PANEL_REFRESH_MS = 5_000;

/** Clusters a panel lists (the report keeps more). */
const CLUSTERS_LISTED = 3;

export interface DashboardDraw {
  productId: string;
  epoch: number;
  state: DrawTranscriptView['state'];
  entriesCloseAt: string;
  /** entries held now (before the freeze), or eligible in the frozen list */
  entries: number;
  removed: number | null;
  root: string | null;
  frozenAt: string | null;
  round: number | null;
  roundAt: string | null;
  /** the beacon's randomness once drawn (hex), null before */
  randomness: string | null;
  drawnAt: string | null;
  winners: number;
  bought: number;
  /** ranks past the first winners given a right: the cascade's passes */
  passes: number;
  /** ranks not offered a unit yet */
  waitlist: number;
}

/** The report's figures as the panel shows them: its clusters counted, the largest listed. */
export type DashboardFairness = Omit<FairnessReportView, 'clusters'> & {
  /** clusters of more than one identity */
  clusters: number;
  /** the largest ones, most units first */
  topClusters: FairnessReportView['clusters'];
};

export function drawPanel(transcript: DrawTranscriptView): DashboardDraw {
  const winners = transcript.winners.length;
  return {
    productId: transcript.productId,
    epoch: transcript.epoch,
    state: transcript.state,
    entriesCloseAt: transcript.entriesCloseAt,
    entries: transcript.entries,
    removed: transcript.removed,
    root: transcript.root,
    frozenAt: transcript.frozenAt,
    round: transcript.round,
    roundAt: transcript.roundAt,
    randomness: transcript.beacon?.randomness ?? null,
    drawnAt: transcript.drawnAt,
    winners,
    bought: transcript.bought.length,
    passes: Math.max(0, transcript.offered - winners),
    waitlist:
      transcript.state === 'drawn'
        ? Math.max(0, transcript.entries - Math.max(transcript.offered, winners))
        : 0,
  };
}

export function fairnessPanel(report: FairnessReportView): DashboardFairness {
  return {
    productId: report.productId,
    epoch: report.epoch,
    mode: report.mode,
    final: report.final,
    identities: report.identities,
    flagged: report.flagged,
    units: report.units,
    flaggedUnits: report.flaggedUnits,
    fairShare: report.fairShare,
    band: report.band,
    advantage: report.advantage,
    advantageBand: report.advantageBand,
    top1PercentShare: report.top1PercentShare,
    clusters: report.clusters.length,
    topClusters: report.clusters.slice(0, CLUSTERS_LISTED),
    rulesChanged: report.rulesChanged,
  };
}

/**
 * The last read of a panel per product, read again once it is `refreshMs` old; a read that
 * fails keeps the last one (a store away for a moment).
 */
export class PanelCache<T> {
  private readonly kept = new Map<string, { at: number; value: T | null }>();
  private readonly reading = new Set<string>();

  constructor(
    private readonly read: (productId: string) => Promise<T | null>,
    private readonly refreshMs = PANEL_REFRESH_MS,
  ) {}

  /** The panels of `productIds` (those that have one), reading the stale ones first. */
  async of(productIds: readonly string[], now: number): Promise<T[]> {
    const stale = productIds.filter(
      (id) => !this.reading.has(id) && now - (this.kept.get(id)?.at ?? -Infinity) >= this.refreshMs,
    );
    await Promise.all(
      stale.map(async (id) => {
        this.reading.add(id);
        try {
          this.kept.set(id, { at: now, value: await this.read(id) });
        } catch {
          // the last read stays
        } finally {
          this.reading.delete(id);
        }
      }),
    );
    for (const id of this.kept.keys()) if (!productIds.includes(id)) this.kept.delete(id);
    return productIds.flatMap((id) => {
      const v = this.kept.get(id)?.value;
      return v ? [v] : [];
    });
  }
}
