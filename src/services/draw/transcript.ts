/**
 * A draw's public transcript (GET /products/:id/draw), a contract others parse: everything an
 * entrant needs to recompute the draw (the frozen list's root and count, the rules' hash and what
 * they removed, the chain and its round, the beacon, the winners and the waitlist in rank order),
 * and what the cascade did (the ranks offered a unit, the entries that bought). The frozen list
 * itself is paged (GET /products/:id/draw/entries). Rank orders are read once per draw and kept.
 */
import type { Catalogue, ProductView } from '../../inventory/index.js';
import type { DrawEntryStore, DrawRecordSource, DrawRecordView } from './ports.js';

export type DrawState = 'upcoming' | 'open' | 'closed' | 'frozen' | 'drawn';

export interface Transcript {
  productId: string;
  epoch: number;
  state: DrawState;
  entriesOpenAt: string;
  entriesCloseAt: string;
  /** eligible entries in the frozen list (before the freeze: entries held now) */
  entries: number;
  /** the frozen list's Merkle root (RFC 6962), hex; null before the freeze */
  root: string | null;
  rulesHash: string | null;
  removed: number | null;
  /** the beacon chain's drand info (its hash, public key, scheme, period, genesis) */
  chain: unknown;
  round: number | null;
  roundAt: string | null;
  beacon: { round: number; randomness: string; signature: string } | null;
  frozenAt: string | null;
  drawnAt: string | null;
  units: number | null;
  /** units a winner may buy: ceil(units / limitPerUser) ranks win */
  limitPerUser: number;
  winners: string[];
  waitlist: string[];
  /** ranks given a purchase right so far (the first `winners`, then the cascade's) */
  offered: number;
  bought: string[];
  /**
   * the cascade: `running` once drawn, `paused` while an operator holds it, `ended` once the sale
   * ended (an operator's end, or its end time): no rank is offered a unit any more; null before
   */
  cascade: 'running' | 'paused' | 'ended' | null;
}

const cascadeOf = (view: ProductView): Transcript['cascade'] =>
  view.endsAt > 0 && Date.now() >= view.endsAt ? 'ended' : view.paused ? 'paused' : 'running';

/** Ids read per query when a draw's rank order is first read. */
const READ_IDS = 50_000;
/** Draws whose rank orders a process keeps (each is its ids, once). */
const KEEP_ORDERS = 4;

export interface TranscriptsDeps {
  catalogue: Pick<Catalogue, 'get'>;
  store: Pick<DrawEntryStore, 'counters' | 'line'>;
  records: DrawRecordSource;
  /** the chain a draw not yet frozen will take its beacon from */
  chain: unknown;
}

export type TranscriptAnswer =
  | { kind: 'transcript'; transcript: Transcript }
  | { kind: 'unknown-product' }
  | { kind: 'no-draw' };

export class Transcripts {
  private readonly orders = new Map<string, string[]>();

  constructor(private readonly deps: TranscriptsDeps) {}

  async transcript(productId: string): Promise<TranscriptAnswer> {
    const view = await this.deps.catalogue.get(productId);
    if (!view) return { kind: 'unknown-product' };
    if (!view.draw) return { kind: 'no-draw' };
    const record = await this.deps.records.record(productId, view.epoch);
    if (!record) return { kind: 'transcript', transcript: await this.open(view) };
    const frozen = {
      productId,
      epoch: view.epoch,
      state: (record.beacon ? 'drawn' : 'frozen') as DrawState,
      ...windowOf(view),
      entries: record.entries,
      root: record.root,
      rulesHash: record.rulesHash,
      removed: record.removed,
      chain: record.chain,
      round: record.round,
      roundAt: record.roundAt.toISOString(),
      beacon: record.beacon && { round: record.round, ...record.beacon },
      frozenAt: record.frozenAt.toISOString(),
      drawnAt: record.drawnAt?.toISOString() ?? null,
      units: record.units,
      limitPerUser: view.limitPerUser,
    };
    if (!record.beacon) {
      return {
        kind: 'transcript',
        transcript: { ...frozen, winners: [], waitlist: [], offered: 0, bought: [], cascade: null },
      };
    }
    const order = await this.rankOrder(productId, view.epoch, record);
    const line = await this.deps.store.line(productId, view.epoch);
    const bought = await this.deps.records.boughtEntryIds(productId, view.epoch);
    return {
      kind: 'transcript',
      transcript: {
        ...frozen,
        winners: order.slice(0, record.winners),
        waitlist: order.slice(record.winners),
        offered: Math.min(line.served, record.entries),
        bought,
        cascade: cascadeOf(view),
      },
    };
  }

  private async open(view: ProductView): Promise<Transcript> {
    const { count, closedAt } = await this.deps.store.counters(view.id, view.epoch);
    const now = Date.now();
    const draw = view.draw!;
    const state: DrawState =
      closedAt > 0 || now >= draw.entriesCloseAt
        ? 'closed'
        : now < draw.entriesOpenAt
          ? 'upcoming'
          : 'open';
    return {
      productId: view.id,
      epoch: view.epoch,
      state,
      ...windowOf(view),
      entries: count,
      root: null,
      rulesHash: null,
      removed: null,
      chain: this.deps.chain,
      round: null,
      roundAt: null,
      beacon: null,
      frozenAt: null,
      drawnAt: null,
      units: view.total,
      limitPerUser: view.limitPerUser,
      winners: [],
      waitlist: [],
      offered: 0,
      cascade: null,
      bought: [],
    };
  }

  private async rankOrder(productId: string, epoch: number, record: DrawRecordView) {
    const key = `${productId}|${epoch}`;
    const had = this.orders.get(key);
    if (had) return had;
    const ids: string[] = [];
    while (ids.length < record.entries) {
      const part = await this.deps.records.entryIdsByRank(
        productId,
        epoch,
        ids.length + 1,
        READ_IDS,
      );
      if (part.length === 0) break;
      ids.push(...part);
    }
    if (this.orders.size >= KEEP_ORDERS) this.orders.delete(this.orders.keys().next().value!);
    this.orders.set(key, ids);
    return ids;
  }

  /**
   * A page of the frozen list, from `after` (a position, the `next` of the page before): the
   * sorted entry ids; null before the freeze.
   */
  async entries(
    productId: string,
    after: number,
    limit: number,
  ): Promise<
    | { kind: 'page'; entries: string[]; next: string | null; total: number }
    | { kind: 'not-frozen' }
    | Exclude<TranscriptAnswer, { kind: 'transcript' }>
  > {
    const view = await this.deps.catalogue.get(productId);
    if (!view) return { kind: 'unknown-product' };
    if (!view.draw) return { kind: 'no-draw' };
    const record = await this.deps.records.record(productId, view.epoch);
    if (!record) return { kind: 'not-frozen' };
    const entries = await this.deps.records.entryIdsFrom(productId, view.epoch, after, limit);
    const end = after + entries.length;
    return {
      kind: 'page',
      entries,
      next: end < record.entries ? String(end) : null,
      total: record.entries,
    };
  }
}

const windowOf = (view: ProductView) => ({
  entriesOpenAt: new Date(view.draw!.entriesOpenAt).toISOString(),
  entriesCloseAt: new Date(view.draw!.entriesCloseAt).toISOString(),
});
