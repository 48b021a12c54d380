/**
 * A draw's way to its line, driven by its room's admitter (the holder of the room's lease, whose
 * fencing token every write here carries): at the close, the entries are closed (Redis's clock),
 * screened and frozen in PostgreSQL with the beacon round R that will draw them; at R's time, the
 * round is fetched from the relays and verified, the ranks computed and written once; then the
 * line, rank by rank, is written into the room a part at a time, ahead of the admitter, which
 * admits the winners and cascades down the waitlist as any line (docs/draw.md).
 *
 * Every step is a function of what is stored: a process killed between any two of them leaves
 * the next holder the same list, the same round, the same beacon and so the same winners.
 */
import type { Db } from '../../db/index.js';
import {
  drawRecord,
  drawSettings,
  entryIdsFrom,
  rankedEntries,
  shoppersByRank,
  writeDraw,
  writeFreeze,
  type DrawRecord,
} from '../../db/draws-repository.js';
import { fetchRound } from '../../draw/beacon.js';
import { firstRoundAtOrAfter, roundTime, type ChainInfo } from '../../draw/chain.js';
import { chunkRoots, rootOfChunks } from '../../draw/merkle.js';
import { drawPositions, sortIds, winnersOf } from '../../draw/ranks.js';
import { NO_RULES, rulesHash, screen, type DrawRules } from '../../draw/screening.js';
import type { Logger } from '../../log.js';
import type { ProductView } from '../catalogue/catalogue.js';
import type { DrawStore } from './store.js';
import { drawMoment, rankEvents, type DrawEvent } from './draw-events.js';

/** The beacon a draw takes its randomness from. */
export interface DrawBeacon {
  chain: ChainInfo;
  /** the chain's HTTP relays, tried in order */
  relays: readonly string[];
  /** round R is the first at or after the freeze plus this */
  marginMs: number;
  /** a relay that does not answer a round in this long is skipped */
  fetchTimeoutMs: number;
}

/** Ranks of the line written per part; written while fewer than this are ahead of the admitter. */
export const LINE_PART = 10_000;
/** A round not on the relays yet is asked for again after this long. */
const ROUND_RETRY_MS = 500;
/** A round refused (it failed verification) is asked for again after this long. */
const REFUSED_RETRY_MS = 2_000;
/** A freeze that came after its round is done again with a margin this many times what it took. */
const LATE_FACTOR = 4;
/** Entry ids read per query when ranking the frozen list. */
const READ_IDS = 50_000;

export interface DrawPhaseDeps {
  store: DrawStore;
  db: Db;
  beacon: DrawBeacon;
  logger?: Logger | undefined;
  /** a beacon that failed verification was refused (metrics) */
  onRefused?: (productId: string, relays: readonly string[]) => void;
  /** the draw's moments, once each where this process did them (freeze, draw) */
  onFrozen?: (view: ProductView, record: DrawRecord) => void;
  onDrawn?: (view: ProductView, record: DrawRecord) => void;
  /** each freeze's phases, in ms (bench:draw prints them) */
  onFreezeTimed?: (view: ProductView, phases: FreezePhases) => void;
  /** publishes the draw's events (feed and webhooks); each id the same each time it is sent */
  publish?: ((events: DrawEvent[]) => Promise<unknown>) | undefined;
}

/** Where a freeze's time went, in ms: each phase in turn. */
export interface FreezePhases {
  read: number;
  screen: number;
  sort: number;
  merkle: number;
  write: number;
  written: 'frozen' | 'existing' | 'late';
}

/** What the admitter does next for a draw: tick its line, or look again at `at` (local ms). */
export type DrawStep = { ready: true } | { ready: false; at: number };

export class DrawPhase {
  /** drawn records, immutable: kept per product and epoch */
  private readonly drawn = new Map<string, DrawRecord>();
  /**
   * per product and epoch: how long the last freeze that came after its round took (ms); the next
   * one's round is at least LATE_FACTOR times that past it, so a list larger than the margin
   * freezes once more instead of missing a round of the margin's length every time (the rows a
   * late freeze rolled back slow the next write until a vacuum: 10^6 entries took 12 s, then 37)
   */
  private readonly late = new Map<string, number>();
  /** per product and epoch: the moments and the ranks this process published (again) so far */
  private readonly told = new Map<string, { frozen: boolean; drawn: boolean; ranks: number }>();

  constructor(private readonly deps: DrawPhaseDeps) {}

  /** The draw's record once drawn (cached), else read again (null before the freeze). */
  async record(productId: string, epoch: number): Promise<DrawRecord | null> {
    const key = `${productId}|${epoch}`;
    const had = this.drawn.get(key);
    if (had) return had;
    const record = await drawRecord(this.deps.db, productId, epoch);
    if (record?.beacon) this.drawn.set(key, record);
    return record;
  }

  /**
   * Takes the draw as far as it can go now under the lease of fencing token `fence`: its line
   * ready (the admitter ticks it), or when to look again.
   */
  async prepare(view: ProductView, fence: number): Promise<DrawStep> {
    const window = view.draw!;
    const now = Date.now();
    if (now < window.entriesCloseAt) return { ready: false, at: window.entriesCloseAt };
    const line = await this.deps.store.line(view.id, view.epoch);
    if (line.opened) return { ready: true };
    let record = await this.record(view.id, view.epoch);
    if (!record) {
      const closed = await this.deps.store.close(view.id, view.epoch, fence, window.entriesCloseAt);
      if (closed.code === 'early') return { ready: false, at: now + closed.msToClose };
      if (closed.code === 'fenced') return { ready: false, at: now + ROUND_RETRY_MS };
      record = await this.freeze(view, closed.closedAt);
      if (!record) return { ready: false, at: Date.now() };
    }
    await this.announce(view, record, 0);
    if (!record.beacon) {
      const roundAt = record.roundAt.getTime();
      if (Date.now() < roundAt) return { ready: false, at: roundAt };
      const drawn = await this.draw(view, record);
      if (!drawn) return { ready: false, at: Date.now() + this.retryMs };
      record = drawn;
    }
    await this.feed(view, fence);
    return { ready: true };
  }

  private retryMs = ROUND_RETRY_MS;

  /**
   * Freezes the closed entries: screened, sorted, the Merkle root, the round that will draw them;
   * null when the write came too late for its round (frozen again, for a later one, at once).
   */
  private async freeze(view: ProductView, closedAt: number): Promise<DrawRecord | null> {
    const { store, db, beacon } = this.deps;
    const settings = await drawSettings(db, view.id, view.epoch);
    const rules = (settings?.rules as DrawRules | undefined) ?? NO_RULES;
    let at = performance.now();
    const lap = () => {
      const was = at;
      at = performance.now();
      return Math.round(at - was);
    };
    const held = await store.scan(view.id, view.epoch);
    const read = lap();
    const { eligible, removed } = screen(held, rules);
    const byId = new Map(eligible.map((e) => [e.entryId, e.userId]));
    const screened = lap();
    const ids = sortIds([...byId.keys()]);
    const sorted = lap();
    const roots = chunkRoots(ids);
    const merkle = lap();
    const frozenAt = Math.max(Date.now(), closedAt);
    const key = `${view.id}|${view.epoch}`;
    const marginMs = Math.max(beacon.marginMs, LATE_FACTOR * (this.late.get(key) ?? 0));
    const round = firstRoundAtOrAfter(beacon.chain, frozenAt + marginMs);
    const units = view.total;
    const written = await writeFreeze(db, {
      productId: view.id,
      epoch: view.epoch,
      frozenAt: new Date(frozenAt),
      closedAt: new Date(closedAt),
      entries: ids.map((entryId) => ({ entryId, userId: byId.get(entryId)! })),
      removed: removed.map((e) => ({ entryId: e.entryId, userId: e.userId, rule: e.rule })),
      root: rootOfChunks(roots).toString('hex'),
      chunkRoots: Buffer.concat(roots),
      rulesHash: rulesHash(rules),
      chain: beacon.chain,
      round,
      roundAt: new Date(roundTime(beacon.chain, round)),
      units,
      winners: Math.min(ids.length, winnersOf(units, view.limitPerUser)),
    });
    this.deps.onFreezeTimed?.(view, {
      read,
      screen: screened,
      sort: sorted,
      merkle,
      write: lap(),
      written,
    });
    if (written === 'late') {
      const tookMs = Date.now() - frozenAt;
      this.late.set(key, tookMs);
      this.deps.logger?.warn(
        { product: view.id, round, tookMs, marginMs },
        'the freeze took past its round: again, with a margin of four times what it took',
      );
      return null;
    }
    this.late.delete(key);
    const record = await drawRecord(db, view.id, view.epoch);
    if (written === 'frozen' && record) {
      this.deps.logger?.info(
        { product: view.id, entries: record.entries, removed: record.removed, round },
        'draw frozen',
      );
      this.deps.onFrozen?.(view, record);
    }
    return record;
  }

  /** Fetches round R, verified, and writes the ranks once; null: no good beacon yet. */
  private async draw(view: ProductView, frozen: DrawRecord): Promise<DrawRecord | null> {
    const { db, beacon } = this.deps;
    const answer = await fetchRound(
      beacon.chain,
      beacon.relays,
      frozen.round,
      beacon.fetchTimeoutMs,
    );
    if (answer.kind !== 'beacon') {
      if (answer.kind === 'refused') {
        this.deps.logger?.warn(
          { product: view.id, round: frozen.round, relays: answer.relays, errors: answer.errors },
          'draw beacon refused: it failed verification',
        );
        this.deps.onRefused?.(view.id, answer.relays);
        this.retryMs = REFUSED_RETRY_MS;
      } else {
        this.retryMs = ROUND_RETRY_MS;
      }
      return null;
    }
    const ids: string[] = [];
    while (ids.length < frozen.entries) {
      const part = await entryIdsFrom(db, view.id, view.epoch, ids.length, READ_IDS);
      if (part.length === 0) break;
      ids.push(...part);
    }
    const positions = drawPositions(ids, answer.beacon.randomness);
    const wrote = await writeDraw(db, view.id, view.epoch, answer.beacon, positions);
    const record = await this.record(view.id, view.epoch);
    if (wrote === 'drawn' && record) {
      this.deps.logger?.info(
        { product: view.id, round: frozen.round, relay: answer.relay, winners: record.winners },
        'draw drawn',
      );
      this.deps.onDrawn?.(view, record);
    }
    return record;
  }

  /**
   * Before a tick: the line written ahead of the admitter, a part at a time, until the last rank
   * (at least LINE_PART ranks, and every winner, past the served counter).
   */
  async feed(view: ProductView, fence: number): Promise<void> {
    const record = await this.record(view.id, view.epoch);
    if (!record?.beacon) return;
    for (;;) {
      const line = await this.deps.store.line(view.id, view.epoch);
      await this.announce(view, record, line.served);
      const ahead = Math.max(LINE_PART, record.winners);
      if (line.last >= record.entries || line.last - line.served >= ahead) return;
      const first = line.last + 1;
      const shoppers = await shoppersByRank(this.deps.db, view.id, view.epoch, first, LINE_PART);
      if (shoppers.length === 0) return;
      const r = await this.deps.store.feed(view.id, view, fence, first, shoppers);
      if (r.code === 'fenced') return;
    }
  }

  /**
   * Publishes what this process has not yet of the draw's moments and of the ranks given a
   * purchase right (up to `served`, the room's served counter: ticket r is rank r). A process
   * publishes them all again once (ids the same: a no-op for those written), so one that died
   * between an admission and its event leaves it to the next. A failure is retried next tick.
   */
  private async announce(view: ProductView, record: DrawRecord, served: number): Promise<void> {
    const publish = this.deps.publish;
    if (!publish) return;
    const key = `${view.id}|${view.epoch}`;
    const told = this.told.get(key) ?? { frozen: false, drawn: false, ranks: 0 };
    this.told.set(key, told);
    try {
      if (!told.frozen) await publish([drawMoment('frozen', view, record)]);
      told.frozen = true;
      if (!record.beacon) return;
      if (!told.drawn) await publish([drawMoment('drawn', view, record)]);
      told.drawn = true;
      while (told.ranks < served) {
        const from = told.ranks + 1;
        const limit = Math.min(served - told.ranks, 1_000);
        const ranked = await rankedEntries(this.deps.db, view.id, view.epoch, from, limit);
        if (ranked.length === 0) return;
        await publish(rankEvents(view, record, ranked));
        told.ranks = ranked[ranked.length - 1]!.rank;
      }
    } catch (err) {
      this.deps.logger?.warn({ err, product: view.id }, 'draw events not published: next tick');
    }
  }
}
