/** The waiting room's shopper side: join, and a place's answer (docs/waiting-room.md). */
export { PollLimit } from './poll-limit.js';
export {
  WaitingRoom,
  type PlaceAnswer,
  type PlaceState,
  type PlaceView,
  type RoomMetricsPort,
} from './waiting-room.js';
export {
  pushRequest,
  TurnPush,
  type PushAnswer,
  type PushKind,
  type PushRequest,
  type PushSend,
  type TurnPayload,
  type TurnPushMetrics,
} from './turn-push.js';
export { roomEventsOf, ROOM_EVENT_SOURCE, soldOutEventsOf } from './room-events.js';
