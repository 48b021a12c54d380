/**
 * A shopper's entry as they read it (GET /products/:id/draw/entry): its id, its state, its rank
 * once drawn, the Merkle proof that it is in the frozen list, and the sale token while they hold
 * the purchase right. States: `entered` (in, not drawn yet), `won` (a purchase right: the first
 * ranks, or a rank the cascade reached), `waitlisted` (at `position` behind the served ranks),
 * `expired` (the right ran out unused), `not-drawn` (every unit went to ranks before theirs, or
 * the shop's screening removed the entry before the freeze: `detail` says which).
 */
import { proofOf, CHUNK_LEAVES } from '../../draw/merkle.js';
import type { Catalogue, ProductView } from '../../inventory/index.js';
import { signSaleToken, type AdmissionRefusal } from '../admission/index.js';
import type { DrawEntryStore, DrawRecordSource, DrawRecordView } from './ports.js';

export type EntryState = 'entered' | 'won' | 'waitlisted' | 'expired' | 'not-drawn';

export interface EntryView {
  entryId: string;
  state: EntryState;
  /** 1 = drawn first; null until drawn (and for an entry the screening removed) */
  rank: number | null;
  /** waitlisted: ranks still ahead of theirs (1 = next to be offered a unit) */
  position: number | null;
  /** that the entry is leaf `index` of the frozen list's Merkle tree (RFC 9162); null before it */
  proof: { index: number; size: number; root: string; path: string[] } | null;
  /** when the draw closes, its round is due, it was drawn (ISO) */
  entriesCloseAt: string;
  drawAt: string | null;
  saleToken?: string;
  saleTokenExpiresAt?: string;
  pollAfterSeconds: number | null;
  detail?: string;
}

export type EntryViewAnswer =
  | { kind: 'view'; view: EntryView }
  | { kind: 'unknown-product' }
  | { kind: 'no-draw' }
  | { kind: 'not-entered' }
  | { kind: 'refused'; refusal: AdmissionRefusal };

/**
 * Polls while something is to come (the draw, the cascade), not so often that they cost; the
 * waitlist's first places ask sooner (a second a place, 10 s at most): a unit passed on reaches
 * them first, and their right's time runs from the admission, not from their next poll.
 */
const POLL_S = { entered: 5, waitlisted: 10 } as const;

export interface EntryViewsDeps {
  catalogue: Pick<Catalogue, 'get'>;
  store: DrawEntryStore;
  records: DrawRecordSource;
  saleTokenSecret: string | undefined;
  /** reads per client address, in memory (RATE_LIMIT_POLL_IP, as the waiting room's polls) */
  pollLimit?: { take(ip: () => string): AdmissionRefusal | undefined } | undefined;
}

export class EntryViews {
  constructor(private readonly deps: EntryViewsDeps) {}

  async view(productId: string, userId: string, ip: () => string): Promise<EntryViewAnswer> {
    const refusal = this.deps.pollLimit?.take(ip);
    if (refusal) return { kind: 'refused', refusal };
    const view = await this.deps.catalogue.get(productId);
    if (!view) return { kind: 'unknown-product' };
    if (!view.draw) return { kind: 'no-draw' };
    const record = await this.deps.records.record(productId, view.epoch);
    const closeAt = new Date(view.draw.entriesCloseAt).toISOString();
    if (!record) {
      const held = await this.deps.store.entryOf(productId, view.epoch, userId);
      if (!held) return { kind: 'not-entered' };
      return viewOf({ entryId: held.entryId, state: 'entered', closeAt, drawAt: null });
    }
    const drawAt = record.roundAt.toISOString();
    const entry = await this.deps.records.frozenEntryOf(productId, view.epoch, userId);
    if (!entry) return { kind: 'not-entered' };
    if (entry.kind === 'removed') {
      return viewOf({
        entryId: entry.entryId,
        state: 'not-drawn',
        closeAt,
        drawAt,
        detail: `the shop's screening removed this entry before the freeze (rule: ${entry.rule})`,
      });
    }
    const proof = await this.proof(productId, view.epoch, record, entry.position);
    const base = { entryId: entry.entryId, closeAt, drawAt, proof };
    if (entry.rank === null) return viewOf({ ...base, state: 'entered' });
    return this.drawn(view, userId, record, { ...base, rank: entry.rank });
  }

  private async drawn(
    view: ProductView,
    userId: string,
    record: DrawRecordView,
    base: ViewParts & { rank: number },
  ): Promise<EntryViewAnswer> {
    const line = await this.deps.store.line(view.id, view.epoch);
    if (base.rank > line.served) {
      const over = (view.endsAt > 0 && Date.now() >= view.endsAt) || soldForGood(view);
      if (over) {
        return viewOf({
          ...base,
          state: 'not-drawn',
          detail: 'every unit went to ranks before yours',
        });
      }
      // a first-round winner the admitter has not reached yet: it hands rights in rank order at
      // its rate, so say so rather than leave rank 3 of 20 wondering why it is waitlisted
      const soon = base.rank <= record.winners;
      const when = view.paused ? 'when the shop resumes the sale' : 'in rank order, in seconds';
      return viewOf({
        ...base,
        state: 'waitlisted',
        position: base.rank - line.served,
        ...(soon && {
          detail: `drawn among the ${record.winners} winners: your purchase right comes ${when}`,
        }),
      });
    }
    const admittedAt = await this.deps.store.admittedAt(view.id, view.epoch, userId);
    const expiresAt = admittedAt + view.draw!.buyWithinSeconds * 1_000;
    if (admittedAt === 0 || Date.now() >= expiresAt) {
      return viewOf({
        ...base,
        state: 'expired',
        detail:
          'your purchase right ran out: an order you placed in it stands; without one, the unit ' +
          'passed to the next rank',
      });
    }
    const secret = this.deps.saleTokenSecret;
    const saleToken = secret
      ? signSaleToken({ userId, productId: view.id, epoch: view.epoch, expiresAt }, secret)
      : undefined;
    return viewOf({
      ...base,
      state: 'won',
      ...(saleToken && { saleToken, saleTokenExpiresAt: new Date(expiresAt).toISOString() }),
    });
  }

  /** The audit path of the leaf at `position`: its block's ids read again, the blocks' roots kept. */
  private async proof(productId: string, epoch: number, record: DrawRecordView, position: number) {
    const block = Math.floor(position / CHUNK_LEAVES) * CHUNK_LEAVES;
    const ids = await this.deps.records.entryIdsFrom(productId, epoch, block, CHUNK_LEAVES);
    const roots = Array.from({ length: record.chunkRoots.length / 32 }, (_, i) =>
      record.chunkRoots.subarray(i * 32, i * 32 + 32),
    );
    const path = proofOf(position, ids, roots).map((b) => b.toString('hex'));
    return { index: position, size: record.entries, root: record.root, path };
  }
}

interface ViewParts {
  entryId: string;
  closeAt: string;
  drawAt: string | null;
  proof?: EntryView['proof'];
}

function viewOf(
  parts: ViewParts & {
    state: EntryState;
    rank?: number;
    position?: number;
    detail?: string;
    saleToken?: string;
    saleTokenExpiresAt?: string;
  },
): EntryViewAnswer {
  const { closeAt, drawAt, proof, rank, position, ...rest } = parts;
  const poll =
    parts.state === 'entered'
      ? POLL_S.entered
      : parts.state === 'waitlisted'
        ? Math.min(POLL_S.waitlisted, Math.max(1, position ?? POLL_S.waitlisted))
        : null;
  return {
    kind: 'view',
    view: {
      entryId: rest.entryId,
      state: rest.state,
      rank: rank ?? null,
      position: position ?? null,
      proof: proof ?? null,
      entriesCloseAt: closeAt,
      drawAt,
      ...(rest.saleToken && { saleToken: rest.saleToken }),
      ...(rest.saleTokenExpiresAt && { saleTokenExpiresAt: rest.saleTokenExpiresAt }),
      pollAfterSeconds: poll,
      ...(rest.detail && { detail: rest.detail }),
    },
  };
}

/** No unit can come back: sold out, and no payment window that could return one. */
const soldForGood = (view: ProductView) =>
  (view.soldOut || view.soldOutMarked) && view.payWithinSeconds === 0;
