/**
 * The waiting rooms of an API process (docs/waiting-room.md): the shopper side (join, polls from
 * memory), the admitter loop that competes for each room's lease, and the seat a purchase frees.
 */
import { LockClient } from '../lock/index.js';
import { RateLimitStore } from '../access/index.js';
import { promRoomMetrics, RoomAdmitter, RoomStore, seatRelease } from '../inventory/index.js';
import type { OrderSubmitter } from '../orders/index.js';
import { Admission, PollLimit, WaitingRoom, type Services } from '../services/index.js';
import type { Core } from './core.js';
import { startDraws, type Draws } from './draws.js';

/** What the API side's services are: the shared ones, the batching submitter, the admitter. */
export type ApiServices = Services & { submitter: OrderSubmitter; roomAdmitter: RoomAdmitter };

export interface Rooms {
  waitingRoom: WaitingRoom;
  admitter: RoomAdmitter;
  bought(productId: string, userId: string): void;
  draws: Draws['services'];
}

export function startRooms(core: Core, admission: Admission): Rooms {
  const { config, inventory } = core;
  const store = new RoomStore(
    core.redis,
    core.keys,
    inventory.replicaWait,
    inventory.headroom,
    inventory.catalogue.roomNotices,
  );
  const metrics = promRoomMetrics(core.registry);
  const draws = startDraws(core, admission);
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
  });
  return {
    waitingRoom,
    admitter,
    bought: seatRelease({ catalogue: inventory.catalogue, store, logger: core.logger }),
    draws: draws.services,
  };
}

/** The admission service (rate limits, sale tokens) and the waiting rooms admitting through it. */
export function admissionAndRooms(core: Core): {
  admission: Admission;
  waitingRoom: WaitingRoom;
  bought: (productId: string, userId: string) => void;
  roomAdmitter: RoomAdmitter;
  draws: Draws['services'];
} {
  const admission = new Admission({
    rateLimiter: new RateLimitStore(core.redis, core.keys),
    catalogue: core.inventory.catalogue,
    config: core.config.admission,
  });
  const rooms = startRooms(core, admission);
  return {
    admission,
    waitingRoom: rooms.waitingRoom,
    bought: (productId, userId) => rooms.bought(productId, userId),
    roomAdmitter: rooms.admitter,
    draws: rooms.draws,
  };
}
