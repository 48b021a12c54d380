/**
 * A product's meta hash: its sale configuration and epoch. Written by lua/beginSeed-1.lua (a new
 * epoch), lua/markSoldOut-1.lua and lua/clearSoldOut-1.lua through lua/includes/productMeta.lua;
 * read by every process that serves or checks the product. Field names: hash-fields.ts.
 */
import type { Strategy } from '../../db/schema.js';
import { META_FIELD } from './hash-fields.js';

export { META_FIELD };

export interface ProductMeta {
  epoch: number;
  total: number;
  segments: number;
  strategy: Strategy;
  /** ms since the epoch; 0 = from the seed on */
  startsAt: number;
  /** ms; 0 = open-ended */
  endsAt: number;
  limitPerUser: number;
  /** the epoch that was seen sold out, 0 when none */
  soldOutEpoch: number;
  /** the most segments any epoch had (older outboxes may hold orders still) */
  maxSegments: number;
  /** seconds buyers have to pay; 0: every sale is final */
  payWithinSeconds: number;
  /** a purchase needs a sale token */
  requireSaleToken: boolean;
  /** catalogue number, carried by order ids (order-ids.ts); 0 until given */
  number: number;
  /** the product's waiting room (docs/waiting-room.md), none when purchases need no place in line */
  waitingRoom: RoomSettings | null;
  /** the sale's price (docs/events.md#prices), null when unpriced */
  price: Price | null;
  /** an operator paused the sale (docs/operations.md#running-a-drop) */
  paused: boolean;
  /** the product is sold by a draw (docs/draw.md), none when first come */
  draw: DrawWindow | null;
  /** the product's own challenge at the door; null: none; 'default': the deployment's (CHALLENGE) */
  challenge: ProductChallenge | null | 'default';
}

/** A product's challenge at the door (docs/fairness.md); the provider's keys are configuration. */
export type ProductChallenge =
  | {
      kind: 'pow';
      /** the clean floor between the issue and the answer; unset: CHALLENGE_CLEAN_FLOOR_MS */
      floorMs?: number | undefined;
    }
  | { kind: 'turnstile' | 'hcaptcha' };

export function encodeChallenge(challenge: ProductChallenge | null): string {
  if (!challenge) return 'off';
  return challenge.kind === 'pow' && challenge.floorMs !== undefined
    ? `pow ${challenge.floorMs}`
    : challenge.kind;
}

function decodeChallenge(text: string | undefined): ProductChallenge | null | 'default' {
  if (text === undefined) return 'default';
  const [kind, floor] = text.split(' ');
  if (kind === 'pow') return floor === undefined ? { kind } : { kind, floorMs: Number(floor) };
  if (kind === 'turnstile' || kind === 'hcaptcha') return { kind };
  return null;
}

/** A draw's entry window and how long a winner has to buy (the rest is in PostgreSQL). */
export interface DrawWindow {
  /** ms since the epoch */
  entriesOpenAt: number;
  entriesCloseAt: number;
  buyWithinSeconds: number;
}

export const encodeDrawWindow = (draw: DrawWindow) =>
  `${draw.entriesOpenAt} ${draw.entriesCloseAt} ${draw.buyWithinSeconds}`;

function decodeDrawWindow(text: string | undefined): DrawWindow | null {
  if (!text) return null;
  const [entriesOpenAt, entriesCloseAt, buyWithinSeconds] = text.split(' ').map(Number);
  if (!Number.isFinite(entriesOpenAt) || !entriesCloseAt || !buyWithinSeconds) return null;
  return { entriesOpenAt: entriesOpenAt!, entriesCloseAt, buyWithinSeconds };
}

/** A unit's price: an integer amount in the currency's minor unit, an ISO 4217 code. */
export interface Price {
  amount: number;
  currency: string;
}

export const encodePrice = (price: Price) => `${price.amount} ${price.currency}`;

function decodePrice(text: string | undefined): Price | null {
  const m = /^(\d+) ([A-Z]{3})$/.exec(text ?? '');
  return m ? { amount: Number(m[1]), currency: m[2]! } : null;
}

/** A waiting room's pace and bounds, as seeded. */
export interface RoomSettings {
  admitPerSecond: number;
  /** most shoppers admitted and not yet done (bought, or their admission expired) */
  maxActive: number;
  /** how long an admission (its sale token) lasts */
  admittedForSeconds: number;
}

export const encodeRoomSettings = (room: RoomSettings) =>
  `${room.admitPerSecond} ${room.maxActive} ${room.admittedForSeconds}`;

function decodeRoomSettings(text: string | undefined): RoomSettings | null {
  if (!text) return null;
  const [admitPerSecond, maxActive, admittedForSeconds] = text.split(' ').map(Number);
  if (!admitPerSecond || !maxActive || !admittedForSeconds) return null;
  return { admitPerSecond, maxActive, admittedForSeconds };
}

/** The meta of an HGETALL reply; null when the product was never seeded. */
export function decodeMeta(hash: Record<string, string>): ProductMeta | null {
  const f = META_FIELD;
  if (!hash[f.epoch]) return null;
  const segments = Number(hash[f.segments]);
  return {
    epoch: Number(hash[f.epoch]),
    total: Number(hash[f.total]),
    segments,
    strategy: hash[f.strategy] as Strategy,
    startsAt: Number(hash[f.startsAt]),
    endsAt: Number(hash[f.endsAt]),
    limitPerUser: Number(hash[f.limitPerUser]),
    soldOutEpoch: Number(hash[f.soldOutEpoch] ?? 0),
    maxSegments: Number(hash[f.maxSegments] ?? segments),
    payWithinSeconds: Number(hash[f.payWithinSeconds] ?? 0),
    requireSaleToken: hash[f.requireSaleToken] === '1',
    number: Number(hash[f.number] ?? 0),
    waitingRoom: decodeRoomSettings(hash[f.waitingRoom]),
    price: decodePrice(hash[f.price]),
    paused: hash[f.paused] === '1',
    draw: decodeDrawWindow(hash[f.draw]),
    challenge: decodeChallenge(hash[f.challenge]),
  };
}

/**
 * Recorded sold out in this epoch, for good. A sale with a payment window is not: units come
 * back, and the mark may be older than the newest return, so its segments decide instead.
 */
export const isSoldOut = (meta: ProductMeta) =>
  meta.soldOutEpoch === meta.epoch && meta.payWithinSeconds === 0;
