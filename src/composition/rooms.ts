/**
 * The waiting rooms of an API process (docs/waiting-room.md): the shopper side (join, polls from
 * memory), the admitter loop that competes for each room's lease, and the seat a purchase frees.
 */
import { Counter } from 'prom-client';
import webPush from 'web-push';
import type { Config } from '../config/index.js';
import { LockClient } from '../lock/index.js';
import { DoorStore, RateLimitStore } from '../access/index.js';
import { promRoomMetrics, RoomAdmitter, RoomStore, seatRelease } from '../inventory/index.js';
import type { OrderSubmitter } from '../orders/index.js';
import {
  addressBlock,
  Admission,
  ChallengeGate,
  defaultRules,
  FairnessNotes,
  FairnessReports,
  PollLimit,
  roomEventsOf,
  soldOutEventsOf,
  ROOM_EVENT_SOURCE,
  rulesText,
  TurnPush,
  WaitingRoom,
  type PushSend,
  type Services,
} from '../services/index.js';
import type { Core } from './core.js';
import { startDraws, type Draws } from './draws.js';
import { publishProductEvents } from '../events/index.js';
import { queuePagePath } from '../http/routes/queue-page.js';

/**
 * A push: `web-push` encrypts the payload (aes128gcm) and signs VAPID; the request goes out by
 * fetch, bounded in time, never redirected (the push service is one PUSH_SERVICE_ORIGINS allows).
 */
function webPushSend(push: NonNullable<Config['push']>): PushSend {
  const vapidDetails = {
    subject: push.subject,
    publicKey: push.publicKey,
    privateKey: push.privateKey,
  };
  return async (subscription, payload, options) => {
    const request = webPush.generateRequestDetails(subscription, payload, {
      vapidDetails,
      TTL: options.ttlSeconds,
      urgency: 'high',
      topic: options.topic,
    });
    const headers = Object.fromEntries(
      Object.entries(request.headers).map(([k, v]) => [k, String(v)]),
    );
    const res = await fetch(request.endpoint, {
      method: request.method,
      headers,
      body: request.body as Buffer,
      redirect: 'error',
      signal: AbortSignal.timeout(10_000),
    });
    await res.arrayBuffer().catch(() => undefined);
    if (res.status === 404 || res.status === 410) return { gone: true };
    if (!res.ok) throw new Error(`push service answered ${res.status}`);
    return { gone: false };
  };
}

/** The turn's Web Push, when VAPID keys are configured. */
function turnPushOf(core: Core, store: RoomStore, admission: Admission): TurnPush | undefined {
  const push = core.config.push;
  if (!push) return undefined;
  const sent = new Counter({
    name: 'seckill_room_push_total',
    help: "Web Push notices of a shopper's turn (admitted, expiring), by outcome: sent, gone (the subscription was dropped), failed, dropped (too many waiting)",
    labelNames: ['kind', 'outcome'],
    registers: [core.registry],
  });
  return new TurnPush({
    store,
    catalogue: core.inventory.catalogue,
    admission,
    send: webPushSend(push),
    services: push.serviceOrigins,
    pageUrl: queuePagePath,
    shopName: core.config.queuePage.shopName,
    metrics: { sent: (kind, outcome) => sent.inc({ kind, outcome }) },
    onError: (err) => core.logger.debug({ err }, 'a turn push failed'),
  });
}

/** What the API side's services are: the shared ones, the batching submitter, the admitter. */
export type ApiServices = Services & { submitter: OrderSubmitter; roomAdmitter: RoomAdmitter };

export interface Rooms {
  waitingRoom: WaitingRoom;
  turnPush: TurnPush | undefined;
  admitter: RoomAdmitter;
  bought(productId: string, userId: string): void;
  draws: Draws['services'];
}

export function startRooms(
  core: Core,
  admission: Admission,
  door: Door = { door: undefined, fairnessNotes: undefined },
): Rooms {
  const { config, inventory } = core;
  const store = new RoomStore(
    core.redis,
    core.keys,
    inventory.replicaWait,
    inventory.headroom,
    inventory.catalogue.roomNotices,
  );
  const metrics = promRoomMetrics(core.registry);
  const draws = startDraws(core, admission, door);
  // its own client: the watchdog lease of a room is ROOM_LEASE_MS, not the segment locks' one
  const locks = new LockClient({
    redis: core.redis,
    pubsub: inventory.pubsub,
    keys: core.keys,
    watchdogTimeoutMs: config.room.leaseMs,
  });
  const turnPush = turnPushOf(core, store, admission);
  const admitter = new RoomAdmitter({
    catalogue: inventory.catalogue,
    store,
    locks,
    tickMs: config.room.tickMs,
    recheckMs: config.room.recheckMs,
    shuffleSeed: config.room.shuffleSeed,
    expiringLeadMs: config.room.expiringLeadMs,
    logger: core.logger,
    onTick: (view, tick) => metrics.ticked(view, tick),
    onMoments: (view, moments) => {
      turnPush
        ?.notify(view, moments)
        .catch((err: unknown) => core.logger.warn({ err, product: view.id }, 'turn push failed'));
      publishProductEvents(core.db, ROOM_EVENT_SOURCE, roomEventsOf(view, moments)).catch(
        (err: unknown) =>
          core.logger.warn({ err, product: view.id }, "the room's events not published"),
      );
    },
    // awaited: the walk names a batch written only once its events are in the feed
    onSoldOut: async (view, shoppers) => {
      await publishProductEvents(core.db, ROOM_EVENT_SOURCE, soldOutEventsOf(view, shoppers));
    },
    onSuperseded: (productId) => metrics.superseded(productId),
    draws: draws.phase,
  });
  admitter.start();
  core.lifecycle.add('room admitter', () => admitter.stop());
  const waitingRoom = new WaitingRoom({
    catalogue: inventory.catalogue,
    store,
    admission,
    config: config.admission,
    pollLimit: new PollLimit(config.admission.pollLimit),
    maxPlaces: config.room.maxPlaces,
    metrics,
    nudge: (productId) => admitter.nudge(productId),
    door: door.door,
    notes: door.fairnessNotes,
  });
  return {
    waitingRoom,
    turnPush,
    admitter,
    bought: seatRelease({ catalogue: inventory.catalogue, store, logger: core.logger }),
    draws: draws.services,
  };
}

/** The door (docs/fairness.md): the challenge, if asked, and who tried each sale. */
export interface Door {
  door: ChallengeGate | undefined;
  fairnessNotes: FairnessNotes | undefined;
}

/** The challenge at the door (CHALLENGE), the notes of who tried, and the fairness reports. */
export function startDoor(core: Core): Door & { fairness: FairnessReports } {
  const { admission } = core.config;
  const store = new DoorStore(core.redis, core.keys);
  const rules = rulesText(defaultRules(admission.fairness));
  const fairnessNotes = new FairnessNotes({
    store,
    rules,
    blockOf: addressBlock,
    onError: (err) => core.logger.warn({ err }, 'fairness notes not written'),
  });
  core.lifecycle.add('fairness notes', () => fairnessNotes.stop());
  // always built: a product may be seeded with a challenge of its own (CHALLENGE off or not)
  const door = new ChallengeGate({
    config: admission.challenge,
    store,
    catalogue: core.inventory.catalogue,
    identitiesPerBlock: admission.fairness.identitiesPerBlock,
    blockOf: addressBlock,
  });
  const fairness = new FairnessReports({
    catalogue: core.inventory.catalogue,
    store,
    orders: core.orderRows,
    rules,
  });
  return { door, fairnessNotes, fairness };
}

/** The admission service (rate limits, sale tokens) and the waiting rooms admitting through it. */
export function admissionAndRooms(core: Core): {
  admission: Admission;
  waitingRoom: WaitingRoom;
  turnPush: TurnPush | undefined;
  bought: (productId: string, userId: string) => void;
  roomAdmitter: RoomAdmitter;
  draws: Draws['services'];
} & Door & { fairness: FairnessReports } {
  const door = startDoor(core);
  const admission = new Admission({
    rateLimiter: new RateLimitStore(core.redis, core.keys),
    catalogue: core.inventory.catalogue,
    config: core.config.admission,
    door: door.door,
    notes: door.fairnessNotes,
  });
  const rooms = startRooms(core, admission, door);
  return {
    ...door,
    admission,
    waitingRoom: rooms.waitingRoom,
    turnPush: rooms.turnPush,
    bought: (productId, userId) => rooms.bought(productId, userId),
    roomAdmitter: rooms.admitter,
    draws: rooms.draws,
  };
}
