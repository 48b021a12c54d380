/**
 * The waiting room's shopper side (docs/waiting-room.md): join, and the place's answer. A poll
 * is answered from this process's memory when it can be: the product's view (sold out, ended) and
 * the served counter come from the notices the catalogue already hears, the shopper's ticket from a
 * small cache filled by their join or first poll here. Only a shopper this process never saw, or
 * one admitted before it heard the batch, costs a Redis read; a shopper found not in line is
 * remembered as such too (for NOT_HERE_MS while the room takes joins, for good once it ended), so
 * a stranger polled again and again costs one read, not one a poll. Polls are limited per client
 * address in memory (RATE_LIMIT_POLL_IP), so made-up ids cannot be sent at will either.
 */
import type { Config } from '../../config/index.js';
import {
  isSoldOut,
  mayComeBack,
  type Catalogue,
  type ProductView,
  type RoomPlace,
  type RoomStore,
} from '../../inventory/index.js';
import type { Admission, AdmissionRefusal, ChallengeCheck, RateState } from '../admission/index.js';
import type { DoorAnswer, FairnessNotes } from '../fairness/index.js';
import type { PlaceAnswer, PlaceView } from './place-view.js';
import type { PollLimit } from './poll-limit.js';
import {
  lineEstimate,
  lobbyEstimate,
  PACE_WINDOW,
  pollSeconds,
  seatsOf,
  type RoomPace,
} from './estimate.js';
import { LobbyGrowth } from './lobby-growth.js';
import { signSaleToken } from '../admission/index.js';

export type { PlaceAnswer, PlaceState, PlaceView } from './place-view.js';

/** What a poll learns once and keeps. */
interface Known {
  ticket: number;
  lobbyCount: number;
  admittedAt: number;
  /** the served counter when the place was read (the notices may not have reached it yet) */
  served: number;
  /** set by the join answered here: time in line and the estimate's error are measured once */
  joinedAt?: number;
  predictedS?: number;
}

/** Shoppers whose tickets a process keeps (oldest forgotten first: they are read again). */
const MAX_KNOWN = 200_000;
/** Shoppers remembered as not in line (oldest forgotten first: they are read again). */
const MAX_STRANGERS = 100_000;
/**
 * How long "not in line" is trusted while the room takes joins: a join answered by another
 * process is not heard here, so a shopper who joined there meanwhile may be told 404 this long at
 * most (and joining again answers the same place). A join answered here forgets it at once.
 */
export const NOT_HERE_MS = 2_000;
/** Polls of a sold-out room: units may come back (a returned order), but not often. */
const SOLD_OUT_POLL_S = 15;
/** Polls of a paused room: a person resumes it. */
const PAUSED_POLL_S = 5;
export interface RoomMetricsPort {
  joined(): void;
  /** a new shopper refused: the room's line is full */
  refusedFull(productId: string): void;
  /** a new shopper refused: the room's Redis is near its maxmemory (REDIS_MEMORY_SHED_AT) */
  refusedShort(productId: string): void;
  /** a shopper's admission seen here: the time they waited and what they were told */
  admitted(waitedS: number, predictedS: number): void;
}

export class WaitingRoom {
  private readonly known = new Map<string, Known>();
  /** shoppers read not in line: key -> trusted until (ms; Infinity once the room has ended) */
  private readonly strangers = new Map<string, number>();
  /** each room's lobby as heard from the places read here: the estimate before the opening */
  private readonly lobbies = new LobbyGrowth();

  constructor(
    private readonly deps: {
      catalogue: Pick<Catalogue, 'known' | 'get'>;
      store: Pick<RoomStore, 'join' | 'place'>;
      admission: Pick<Admission, 'limit'>;
      /** RATE_LIMIT_POLL_IP, in memory */
      pollLimit: Pick<PollLimit, 'take'>;
      config: Config['admission'];
      /** places a room's line holds at most (ROOM_MAX_PLACES) */
      maxPlaces: number;
      metrics?: RoomMetricsPort | undefined;
      /** [0, 1): the polls' jitter (tests pin it) */
      random?: () => number;
      /**
       * A shopper waits in a room heard asleep on a join: their join's wake was lost (its
       * process died before sending it); this process's admitter looks at the room.
       */
      nudge?: (productId: string) => void;
      /** the challenge at the door of products that ask one */
      door?: ChallengeCheck | undefined;
      /** who tried each sale (the fairness report) */
      notes?: Pick<FairnessNotes, 'tried' | 'failed'> | undefined;
    },
  ) {}

  /** @param at - the challenge's answer (Challenge), the shop's fingerprint (Shopper-Fingerprint) */
  async join(
    productId: string,
    userId: string,
    ip: string,
    at: DoorAnswer = {},
  ): Promise<PlaceAnswer> {
    const limited = await this.deps.admission.limit('queue', userId, ip);
    if (limited.refusal) return { kind: 'refused', refusal: limited.refusal };
    const view = await this.deps.catalogue.get(productId);
    if (!view) return { kind: 'unknown-product' };
    // a draw's room is its cascade, in rank order: nobody joins it
    if (!view.room || view.draw) return { kind: 'no-room' };
    const refused = await this.deps.door?.check(productId, userId, ip, at.challenge);
    if (refused) this.deps.notes?.failed(productId, view.epoch, userId, ip);
    else this.deps.notes?.tried(productId, view.epoch, userId, ip, at);
    if (refused) return { kind: 'refused', refusal: refused };
    const now = Date.now();
    if (ended(view, now)) return { kind: 'view', view: this.answer(view, userId, null, now) };
    const maxPlaces = this.deps.maxPlaces;
    const place = await this.deps.store.join(productId, view, userId, maxPlaces);
    if (place.refused) {
      if (place.refused === 'short') {
        this.deps.metrics?.refusedShort(productId);
        return { kind: 'store-short' };
      }
      this.deps.metrics?.refusedFull(productId);
      return { kind: 'room-full', maxPlaces };
    }
    this.strangers.delete(keyOf(view, userId));
    if (place.joined) this.deps.metrics?.joined();
    const k = this.remember(view, userId, place);
    const answer = this.answer(view, userId, k, now);
    if (place.joined) {
      k.joinedAt = now;
      k.predictedS = answer.estimatedWaitSeconds?.p50 ?? 0;
    }
    return { kind: 'view', view: answer, rate: limited.state };
  }

  /**
   * The place of a shopper who joined: from memory (a plain value, no promise) when this process
   * knows enough, else after one Redis read. A shopper who holds no place is answered
   * `not-joined`, also after the room's end: a poll does not tell whether one was ever in line.
   * @param ip - reads the client's address (RATE_LIMIT_POLL_IP, counted in memory)
   */
  poll(productId: string, userId: string, ip: () => string): PlaceAnswer | Promise<PlaceAnswer> {
    const refusal = this.deps.pollLimit.take(ip);
    if (refusal) return { kind: 'refused', refusal };
    const view = this.deps.catalogue.known(productId);
    if (view?.room && !view.draw) {
      const now = Date.now();
      const key = keyOf(view, userId);
      const k = this.known.get(key);
      if (!k) {
        const until = this.strangers.get(key);
        if (until !== undefined && now < until) return { kind: 'not-joined' };
      } else {
        if (ended(view, now)) return { kind: 'view', view: this.answer(view, userId, null, now) };
        if (this.answersFromMemory(view, k, now)) {
          const heard = view.room.heard;
          if (heard.sleeping === 'join' && k.ticket > heard.served) this.deps.nudge?.(productId);
          return { kind: 'view', view: this.answer(view, userId, k, now) };
        }
      }
    }
    return this.pollFromStore(productId, userId);
  }

  private answersFromMemory(view: ProductView, place: Known, now: number): boolean {
    const k = place;
    // an admitted shopper keeps their token (units may come back); the rest hear sold-out
    if (k.admittedAt > 0) return true;
    const heard = view.room!.heard;
    const served = heard.served;
    if (k.ticket === 0) return isSoldOut(view) || (served < 0 && now < view.startsAt);
    if (k.ticket > served) return served >= 0 || isSoldOut(view);
    if (!heard.knows(k.ticket)) return false;
    k.admittedAt = heard.admittedAt(k.ticket);
    return k.admittedAt > 0;
  }

  private async pollFromStore(productId: string, userId: string): Promise<PlaceAnswer> {
    const view = await this.deps.catalogue.get(productId);
    if (!view) return { kind: 'unknown-product' };
    if (!view.room || view.draw) return { kind: 'no-room' };
    const now = Date.now();
    const place = await this.deps.store.place(productId, view.epoch, userId);
    if (!place) {
      this.rememberStranger(view, userId, now);
      return { kind: 'not-joined' };
    }
    const k = this.remember(view, userId, place);
    return { kind: 'view', view: this.answer(view, userId, k, now) };
  }

  /** `userId` holds no place in the view's room: trusted NOT_HERE_MS, for good once it ended. */
  private rememberStranger(view: ProductView, userId: string, now: number): void {
    const key = keyOf(view, userId);
    this.strangers.delete(key);
    if (this.strangers.size >= MAX_STRANGERS) {
      this.strangers.delete(this.strangers.keys().next().value!);
    }
    this.strangers.set(key, ended(view, now) ? Infinity : now + NOT_HERE_MS);
  }

  private remember(view: ProductView, userId: string, place: RoomPlace): Known {
    const key = keyOf(view, userId);
    const had = this.known.get(key);
    const k: Known = {
      ...had,
      ticket: place.ticket,
      lobbyCount: place.lobbyCount,
      admittedAt: place.admittedAt,
      served: place.served,
    };
    this.known.delete(key);
    if (this.known.size >= MAX_KNOWN) this.known.delete(this.known.keys().next().value!);
    this.known.set(key, k);
    if (!place.opened) this.lobbies.observe(roomOf(view), place.lobbyCount, Date.now());
    // a room asleep sends no notice: a process that started since learns its counter here
    if (place.opened) view.room?.heard.floor(place.served);
    return k;
  }

  private answer(view: ProductView, userId: string, place: Known | null, now: number): PlaceView {
    const k = place;
    const { settings: room, heard } = view.room!;
    const none = { position: null, aheadOfYou: null, estimatedWaitSeconds: null };
    if (!k || ended(view, now)) return { state: 'ended', ...none, pollAfterSeconds: null };
    if (k.admittedAt > 0) return this.admitted(view, userId, k, now);
    if (isSoldOut(view)) {
      const final = !mayComeBack(view, now);
      return {
        state: 'sold-out',
        ...none,
        pollAfterSeconds: final ? null : this.jitter(SOLD_OUT_POLL_S),
        final,
        detail: final
          ? 'every unit is sold for good'
          : 'sold out for now: unpaid orders may still expire and their units come back to the line',
      };
    }
    if (view.paused && (k.ticket > 0 || now >= view.startsAt)) {
      const position =
        k.ticket > 0 ? k.ticket - Math.max(0, view.room!.heard.served, k.served) : null;
      return {
        state: 'paused',
        position,
        aheadOfYou: position === null ? null : position - 1,
        estimatedWaitSeconds: null,
        pollAfterSeconds: this.jitter(PAUSED_POLL_S),
        detail:
          'the shop paused the sale: your place is kept, the line moves again when it resumes',
      };
    }
    const pace: RoomPace = { ...room, seats: seatsOf(room, view.total, view.limitPerUser) };
    if (k.ticket === 0) {
      const lobby = roomOf(view);
      const untilOpenS = Math.max(0, (view.startsAt - now) / 1_000);
      const estimate = lobbyEstimate(
        {
          untilOpenS,
          lobby: Math.max(k.lobbyCount, this.lobbies.count(lobby)),
          joinPerSecond: this.lobbies.perSecond(lobby, now),
          heardForS: this.lobbies.heardForMs(lobby) / 1_000,
          servable: view.total,
        },
        pace,
      );
      return {
        state: 'waiting',
        position: null,
        aheadOfYou: null,
        estimatedWaitSeconds: estimate,
        // the estimate sharpens as the lobby grows: asked again as the opening nears
        pollAfterSeconds: this.jitter(Math.min(30, Math.max(1, untilOpenS / 2))),
      };
    }
    const position = k.ticket - Math.max(0, heard.served, k.served);
    const estimate = lineEstimate(
      position,
      pace,
      heard.pace(now, PACE_WINDOW.ms, PACE_WINDOW.minSpanMs),
      k.ticket > Math.ceil(view.total / Math.max(1, view.limitPerUser)),
    );
    return {
      state: 'waiting',
      position,
      aheadOfYou: position - 1,
      estimatedWaitSeconds: estimate,
      pollAfterSeconds: this.jitter(pollSeconds(position, room)),
    };
  }

  private admitted(view: ProductView, userId: string, place: Known, now: number): PlaceView {
    const k = place;
    const secret = this.deps.config.saleTokenSecret;
    const expiresAt = k.admittedAt + view.room!.settings.admittedForSeconds * 1_000;
    if (now >= expiresAt) {
      return {
        state: 'expired',
        position: null,
        aheadOfYou: null,
        estimatedWaitSeconds: null,
        pollAfterSeconds: null,
        detail:
          `your turn ran out at ${new Date(expiresAt).toISOString()}: an order you placed in it ` +
          'stands; without one, this sale takes no purchase from you any more',
      };
    }
    if (k.joinedAt !== undefined) {
      this.deps.metrics?.admitted((k.admittedAt - k.joinedAt) / 1_000, k.predictedS ?? 0);
      delete k.joinedAt;
    }
    const saleToken = secret
      ? signSaleToken({ userId, productId: view.id, epoch: view.epoch, expiresAt }, secret)
      : undefined;
    return {
      state: 'admitted',
      position: 0,
      aheadOfYou: 0,
      estimatedWaitSeconds: { p50: 0, p90: 0 },
      pollAfterSeconds: null,
      ...(saleToken && { saleToken, saleTokenExpiresAt: new Date(expiresAt).toISOString() }),
    };
  }

  /** `seconds`, spread over +-20 % so a crowd told the same wait does not poll in step. */
  private jitter(seconds: number): number {
    const r = (this.deps.random ?? Math.random)();
    return Math.max(1, Math.round(seconds * (0.8 + 0.4 * r)));
  }
}

const keyOf = (view: ProductView, userId: string) => `${view.id}|${view.epoch}|${userId}`;
const roomOf = (view: ProductView) => `${view.id}|${view.epoch}`;
const ended = (view: ProductView, now: number) => view.endsAt > 0 && now >= view.endsAt;
