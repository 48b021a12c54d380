/**
 * A shopper's entry into a draw, and its withdrawal (docs/draw.md): one entry per shopper identity
 * (the identities of POST /seckill), limited per shopper and per client address as the waiting
 * room's joins are (their buckets), the client's address block kept for the shop's screening.
 * An entry pays at the door as a join does: the product's challenge, checked once before the
 * store; a refused one writes nothing, and every entry is noted as tried for the fairness report.
 */
import { addressBlock } from '../../draw/screening.js';
import type { Catalogue, ProductView } from '../../inventory/index.js';
import type { Admission, AdmissionRefusal, ChallengeCheck, RateState } from '../admission/index.js';
import type { DoorAnswer, FairnessNotes } from '../fairness/index.js';
import type { DrawEntryStore, EnterAnswer } from './ports.js';

export type EntryAnswer =
  | {
      kind: 'entered';
      created: boolean;
      entryId: string;
      entries: number;
      closeAt: number;
      rate?: RateState;
    }
  | { kind: 'withdrawn'; entryId: string }
  | { kind: 'unknown-product' }
  | { kind: 'no-draw' }
  | { kind: 'not-entered' }
  | { kind: 'not-open'; opensAt: number }
  | { kind: 'closed'; closedAt: number }
  | { kind: 'full'; maxEntries: number }
  | { kind: 'store-short' }
  | { kind: 'refused'; refusal: AdmissionRefusal };

export interface DrawEntriesDeps {
  catalogue: Pick<Catalogue, 'get'>;
  store: DrawEntryStore;
  admission: Pick<Admission, 'limit'>;
  /** entries a draw holds at most (ROOM_MAX_PLACES, as a room's places) */
  maxEntries: number;
  /** the challenge at the door of products that ask one (the join's) */
  door?: ChallengeCheck | undefined;
  /** who tried each sale (the fairness report) */
  notes?: Pick<FairnessNotes, 'tried' | 'failed'> | undefined;
}

export class DrawEntries {
  constructor(private readonly deps: DrawEntriesDeps) {}

  /** The checks an entry (or a withdrawal) passes before the store: the rate limits today. */
  private async admit(userId: string, ip: string) {
    return this.deps.admission.limit('queue', userId, ip);
  }

  private async drawOf(productId: string): Promise<ProductView | EntryAnswer> {
    const view = await this.deps.catalogue.get(productId);
    if (!view) return { kind: 'unknown-product' };
    if (!view.draw) return { kind: 'no-draw' };
    return view;
  }

  /** @param at - the challenge's answer (Challenge), the shop's fingerprint (Shopper-Fingerprint) */
  async enter(
    productId: string,
    userId: string,
    ip: string,
    at: DoorAnswer = {},
  ): Promise<EntryAnswer> {
    const limited = await this.admit(userId, ip);
    if (limited.refusal) return { kind: 'refused', refusal: limited.refusal };
    const view = await this.drawOf(productId);
    if (!('epoch' in view)) return view;
    const { door, notes } = this.deps;
    const refused = await door?.check(productId, userId, ip, at.challenge);
    if (refused) {
      notes?.failed(productId, view.epoch, userId, ip);
      return { kind: 'refused', refusal: refused };
    }
    notes?.tried(productId, view.epoch, userId, ip, at);
    const draw = view.draw!;
    const reply = await this.deps.store.enter(
      productId,
      { epoch: view.epoch, endsAt: view.endsAt, draw },
      { userId, block: addressBlock(ip) },
      this.deps.maxEntries,
    );
    return this.answerOf(reply, draw.entriesOpenAt, draw.entriesCloseAt, limited.state);
  }

  private answerOf(
    reply: EnterAnswer,
    opensAt: number,
    closedAt: number,
    rate: RateState | undefined,
  ): EntryAnswer {
    switch (reply.code) {
      case 'entered':
      case 'held':
        return {
          kind: 'entered',
          created: reply.code === 'entered',
          entryId: reply.entryId,
          entries: reply.count,
          closeAt: closedAt,
          ...(rate && { rate }),
        };
      case 'early':
        return { kind: 'not-open', opensAt };
      case 'closed':
        return { kind: 'closed', closedAt };
      case 'full':
        return { kind: 'full', maxEntries: this.deps.maxEntries };
      case 'short':
        return { kind: 'store-short' };
    }
  }

  async withdraw(productId: string, userId: string, ip: string): Promise<EntryAnswer> {
    const limited = await this.admit(userId, ip);
    if (limited.refusal) return { kind: 'refused', refusal: limited.refusal };
    const view = await this.drawOf(productId);
    if (!('epoch' in view)) return view;
    const closeAt = view.draw!.entriesCloseAt;
    const r = await this.deps.store.withdraw(productId, view.epoch, userId, closeAt);
    if (r.code === 'closed') return { kind: 'closed', closedAt: closeAt };
    if (r.code === 'none') return { kind: 'not-entered' };
    return { kind: 'withdrawn', entryId: r.entryId };
  }
}
