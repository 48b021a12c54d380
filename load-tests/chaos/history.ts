/**
 * What a chaos run keeps: the history (every operation a client sent and what it saw, the waiting
 * room's joins and polls among them), the final state read after the settle phase, and the
 * verdicts of the checks. Types only: the checkers (checker.ts, room-checks.ts), the shoppers that
 * record the history and the report all speak them.
 */
import type { OrderRowStatus } from '../../src/db/schema.js';

/** ok: 202 with an order id; fail: a definite refusal (4xx); unknown: timeout, reset, 5xx. */
export type Outcome = 'ok' | 'fail' | 'unknown';

export interface PurchaseOp {
  type: 'purchase';
  op: number;
  user: string;
  key: string;
  product: string;
  quantity: number;
  invokeMs: number;
  completeMs: number;
  outcome: Outcome;
  status: number;
  /** the problem+json `code` of a refusal or a 5xx */
  code?: string;
  /** the order id of a 202 (or the one a 503 named: it may or may not exist) */
  orderId?: string;
}

/** How an unknown purchase was settled after the run: its order exists, or its units are back. */
export interface ResolveOp {
  type: 'resolve';
  op: number;
  answer: 'order' | 'none';
  orderId?: string;
}

/**
 * A buyer's move on a payment-window order: `pay` is ok when the provider's signed webhook
 * answered 200 paid; `cancel` when the buyer's cancel answered 200 cancelled.
 */
export interface SettleOp {
  type: 'pay' | 'cancel';
  op: number;
  orderId: string;
  user: string;
  product: string;
  invokeMs: number;
  completeMs: number;
  outcome: Outcome;
  status: number;
}

/**
 * One request the flaky webhook receiver got (receiver.ts): the order event it carried, what it
 * answered (2xx: acknowledged; 0: it hung or was cut by a restart), and the order's row version
 * in PostgreSQL when it arrived (null: no row).
 */
export interface DeliveryOp {
  type: 'delivery';
  op: number;
  atMs: number;
  id: string;
  orderId: string;
  version: number;
  eventType: string;
  /** the order's status the event carries (GET /orders/:id's words) */
  status: string;
  answered: number;
  /** the signature verified with the endpoint's secret */
  verified: boolean;
  /** absent when PostgreSQL did not answer the receiver (it answered 503, taking nothing) */
  rowVersion?: number | null;
}

/** An operator's control of a product during the run (room-pause.ts): the admin API's answer. */
export interface ControlOp {
  type: 'control';
  op: number;
  action: 'pause' | 'resume';
  product: string;
  invokeMs: number;
  completeMs: number;
  /** 0: no answer (timeout, reset): it may or may not have run */
  status: number;
  /** the problem's code of a refusal or a 5xx */
  code?: string;
}

/**
 * the waiting-room product's answers, the receiver's deliveries and the operator's controls ride
 * in the same history
 */
export type HistoryEntry =
  PurchaseOp | ResolveOp | SettleOp | RoomOp | DeliveryOp | ControlOp | DrawOp;

export interface OrderRow {
  id: string;
  idempotencyKey: string;
  product: string;
  user: string;
  quantity: number;
  status: OrderRowStatus;
  /** how many times its units went back on sale (0 or 1 when correct) */
  restocks: number;
  /** a returned order: ms from its close to its units' return (restocked_at - closed_at) */
  returnDelayMs?: number;
  /** 1 when written, +1 by each change of state: its last order event's version */
  version?: number;
  /** when Redis sold it (deducted_at, Redis's clock on this machine), in ms of the run */
  deductedMs?: number;
}

export interface ProductFinal {
  id: string;
  seeded: number;
  limitPerUser: number;
  remaining: number;
  held: number;
  sold: number;
  restocked: number;
  /** units of acknowledged sales a segment lost in a failover (default mode): back in stock */
  lostUnits?: number;
}

export interface FinalState {
  /** REDIS_WAIT_REPLICAS=1: no acknowledged sale may be lost */
  durable: boolean;
  products: ProductFinal[];
  orders: OrderRow[];
  /** reconcile said ok, but for the lost writes it lists (default mode's expected loss) */
  reconcileOk: boolean;
  /** order ids reconciliation names as acknowledged but lost (default mode) */
  reconcileLost: string[];
  /**
   * Where a lost sale may have left no trace (default mode): the Redis Cluster slots of the
   * masters killed after their replication was lagged, the slot of the order queue's jobs, and
   * the slot of each acknowledged order's home segment (its marker or claim, its keyed record).
   */
  killed?: TracelessScope;
}

export interface TracelessScope {
  slots: Array<[number, number]>;
  queueSlot: number;
  /** orderId -> its shopper's home segment's slot */
  homeSlotOf: Record<string, number>;
}

export type InvariantName =
  | 'no-oversell'
  | 'no-lost-ack'
  | 'unknown-resolved-once'
  | 'no-duplicate'
  | 'conservation'
  | 'restock-once'
  | 'payment-window'
  | 'answers-after-faults'
  | 'no-sale-while-paused'
  | RoomInvariantName
  | EventInvariantName
  | DrawInvariantName;

export type EventInvariantName = 'events-complete' | 'events-ordered' | 'events-no-phantom';

export interface InvariantResult {
  name: InvariantName;
  ok: boolean;
  /** the first counter-example, naming the operation, user and key where there is one */
  counterExample?: string;
  /** default mode: acknowledged sales lost in a failover (named + without a trace) */
  lost?: number;
  /** of them, those reconciliation names (their rows survived) */
  named?: number;
  /** of them, those whose sale and queued job were both on a killed master: nothing names them */
  traceless?: number;
  /** room checks, default mode: places lost with a master killed after a lag (room-checks.ts) */
  placesLost?: number;
  /** room-one-place, default mode: places moved back by the admissions such a kill took back */
  rewound?: number;
  /**
   * no-sale-while-paused: how long the product was certainly paused, the purchases sent then and
   * those refused `sale-paused`, and the room's answers `paused`
   */
  paused?: { ms: number; purchases: number; refused: number; roomAnswers: number };
  /** restock-once: returns that came, but later than LATE_RETURN_MS after their close */
  late?: { count: number; longestMs: number; orderId: string };
}

export type RoomState = 'waiting' | 'paused' | 'admitted' | 'expired' | 'sold-out' | 'ended';

/** One answer of the room to a shopper: its join (POST) or a poll (GET). */
export interface RoomOp {
  type: 'room';
  op: number;
  kind: 'join' | 'poll';
  user: string;
  product: string;
  invokeMs: number;
  completeMs: number;
  status: number;
  state?: RoomState;
  /** 1 = next to be admitted; null before the opening */
  position?: number | null;
  /** the answer carried a sale token */
  token?: boolean;
}

/** A purchase of the room product, marked with whether it carried a sale token. */
export type RoomPurchaseOp = PurchaseOp & { saleToken: boolean };

export type RoomInvariantName = 'room-fifo' | 'room-one-place' | 'room-no-sale-without-admission';

/** One answer of the draw to a shopper: an entry (POST, from two tabs at once) or a read (GET). */
export interface DrawOp {
  type: 'draw';
  op: number;
  kind: 'enter' | 'read';
  user: string;
  product: string;
  invokeMs: number;
  completeMs: number;
  status: number;
  entryId?: string;
  state?: 'entered' | 'won' | 'waitlisted' | 'expired' | 'not-drawn';
  rank?: number | null;
}

export type DrawInvariantName = 'draw-frozen-before-beacon' | 'draw-cascade-in-rank';
