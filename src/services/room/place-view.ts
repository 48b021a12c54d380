/**
 * What a shopper is answered about their place in a waiting room (docs/waiting-room.md), as
 * `POST` and `GET /products/:id/queue` send it, or why not.
 */
import type { AdmissionRefusal, RateState } from '../admission/index.js';

export type PlaceState = 'waiting' | 'paused' | 'admitted' | 'expired' | 'sold-out' | 'ended';

export interface PlaceView {
  state: PlaceState;
  /** 1 = next to be admitted; null before the opening (the lobby is not ordered yet) */
  position: number | null;
  aheadOfYou: number | null;
  estimatedWaitSeconds: { p50: number; p90: number } | null;
  /** when to poll again (jittered); null when there is nothing more to wait for */
  pollAfterSeconds: number | null;
  /** once admitted: send it as Sale-Token on POST /seckill */
  saleToken?: string;
  saleTokenExpiresAt?: string;
  /** sold-out: true when no unit can come back (no unpaid order is still open) */
  final?: boolean;
  /** paused, expired, sold-out: what it means for the shopper, in words */
  detail?: string;
}

export type PlaceAnswer =
  | { kind: 'view'; view: PlaceView; rate?: RateState | undefined }
  | { kind: 'unknown-product' }
  | { kind: 'no-room' }
  | { kind: 'not-joined' }
  /** the line holds `maxPlaces` already (ROOM_MAX_PLACES): nobody new joins */
  | { kind: 'room-full'; maxPlaces: number }
  /** the room's Redis is near its maxmemory: no new place is written (the sale goes on) */
  | { kind: 'store-short' }
  | { kind: 'refused'; refusal: AdmissionRefusal };
