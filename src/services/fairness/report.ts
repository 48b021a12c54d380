/**
 * A sale's fairness report (GET /admin/products/:id/fairness, docs/fairness.md): the figures of
 * figures.ts over the sale's notes and its persisted orders, judged by the rules the sale pinned.
 */
import type { Catalogue } from '../../inventory/index.js';
import { fairnessFigures, type FairnessFigures } from './figures.js';
import type { FairnessStore } from './notes.js';
import {
  flaggedBy,
  rulesHash,
  type FairnessRule,
  type FairnessRules,
  type Noted,
} from './rules.js';

export interface FairnessReport extends FairnessFigures {
  productId: string;
  epoch: number;
  /** how the sale admitted: through its waiting room, or plain (a sale token or none) */
  mode: 'room' | 'plain';
  /** SHA-256 of the rules this sale is judged by (pinned by its first note) */
  rulesHash: string;
  rules: FairnessRules;
  /** the deployment's rules now differ from the pinned ones: they judge the next sale */
  rulesChanged: boolean;
  /** identities each rule flagged (one identity may be flagged by several) */
  flaggedByRule: Record<FairnessRule, number>;
  /** the sale has ended (or sold out): the figures are final once its orders are persisted */
  final: boolean;
  at: string;
}

/** Units per buyer of a sale epoch (the order rows). */
export interface UnitsByBuyer {
  unitsByBuyer(productId: string, epoch: number): Promise<Map<string, number>>;
}

export class FairnessReports {
  constructor(
    private readonly deps: {
      catalogue: Pick<Catalogue, 'get'>;
      store: Pick<FairnessStore, 'read'>;
      orders: UnitsByBuyer;
      /** the rules' canonical text now */
      rules: string;
    },
  ) {}

  /** @returns null for an unknown product */
  async report(productId: string): Promise<FairnessReport | null> {
    const view = await this.deps.catalogue.get(productId);
    if (!view) return null;
    const [notes, units] = await Promise.all([
      this.deps.store.read(productId, view.epoch),
      this.deps.orders.unitsByBuyer(productId, view.epoch),
    ]);
    const text = notes.rules ?? this.deps.rules;
    const rules = JSON.parse(text) as FairnessRules;
    const noted: Noted[] = notes.seen.map((t) => ({
      ...t,
      fails: notes.fails.get(t.userId) ?? 0,
      decoys: notes.decoys.get(t.userId) ?? 0,
    }));
    const { flagged, byRule } = flaggedBy(rules, noted);
    const now = Date.now();
    return {
      productId,
      epoch: view.epoch,
      mode: view.room ? 'room' : 'plain',
      ...fairnessFigures(notes.seen, units, flagged),
      rulesHash: rulesHash(text),
      rules,
      rulesChanged: text !== this.deps.rules,
      flaggedByRule: byRule,
      final: (view.endsAt > 0 && now >= view.endsAt) || view.soldOut || view.soldOutMarked,
      at: new Date(now).toISOString(),
    };
  }
}
