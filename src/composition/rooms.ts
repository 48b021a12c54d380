/**
 * The waiting rooms of an API process (docs/waiting-room.md): the shopper side (join, polls from
 * memory), the admitter loop that competes for each room's lease, and the seat a purchase frees.
 */
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
  rulesText,
  WaitingRoom,
  type Services,
} from '../services/index.js';
import type { Core } from './core.js';

/** What the API side's services are: the shared ones, the batching submitter, the admitter. */
export type ApiServices = Services & { submitter: OrderSubmitter; roomAdmitter: RoomAdmitter };

export interface Rooms {
  waitingRoom: WaitingRoom;
  admitter: RoomAdmitter;
  bought(productId: string, userId: string): void;
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
  // its own client: the watchdog lease of a room is ROOM_LEASE_MS, not the segment locks' one
  const locks = new LockClient({
    redis: core.redis,
    pubsub: inventory.pubsub,
    keys: core.keys,
    watchdogTimeoutMs: config.room.leaseMs,
  });
  const admitter = new RoomAdmitter({
    catalogue: inventory.catalogue,
    store,
    locks,
    tickMs: config.room.tickMs,
    recheckMs: config.room.recheckMs,
    shuffleSeed: config.room.shuffleSeed,
    logger: core.logger,
    onTick: (view, tick) => metrics.ticked(view, tick),
    onSuperseded: (productId) => metrics.superseded(productId),
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
    admitter,
    bought: seatRelease({ catalogue: inventory.catalogue, store, logger: core.logger }),
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
  const rules = rulesText(defaultRules(admission.identitiesPerBlock));
  const fairnessNotes = new FairnessNotes({
    store,
    rules,
    blockOf: addressBlock,
    onError: (err) => core.logger.warn({ err }, 'fairness notes not written'),
  });
  core.lifecycle.add('fairness notes', () => fairnessNotes.stop());
  const door =
    admission.challenge.kind === 'off'
      ? undefined
      : new ChallengeGate({
          config: admission.challenge,
          store,
          identitiesPerBlock: admission.identitiesPerBlock,
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
  bought: (productId: string, userId: string) => void;
  roomAdmitter: RoomAdmitter;
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
    bought: (productId, userId) => rooms.bought(productId, userId),
    roomAdmitter: rooms.admitter,
  };
}
