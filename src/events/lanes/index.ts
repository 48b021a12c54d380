/**
 * The lanes' door: what each endpoint is owed, one lane per endpoint and subject (an order, or a
 * product event's subject), in PostgreSQL (the
 * relay's hand-on, acknowledgements, when each lane is tried next, dead letters, replays, what is
 * pending). The relay writes them, deliveries read and move them. Knows the feed, nothing else of
 * events/.
 */
export {
  LanesRepository,
  type Ack,
  type DeadLetter,
  type DueLane,
  type Failure,
  type HandOn,
  type Lane,
  type LaneRef,
} from './lanes-repository.js';
export { RECOVERY_AFTER_MS } from './lane-schedule-repository.js';
