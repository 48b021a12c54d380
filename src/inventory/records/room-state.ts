/**
 * A waiting room's hash, read from TypeScript: the counters a shopper's place is answered with.
 * Its fields are ROOM_FIELD's (hash-fields.ts); the scripts read and write it through
 * lua/includes/roomState.lua.
 */
import { ROOM_FIELD } from './hash-fields.js';

/** The room's counters a shopper's place is answered with. */
export interface RoomCounters {
  /** every ticket up to this one is admitted */
  served: number;
  opened: boolean;
  /** shoppers in the lobby (before the opening) */
  lobbyCount: number;
}

/** The fields of the counters, in the order {@link decodeRoomCounters} reads them (HMGET). */
export const ROOM_COUNTER_FIELDS = [ROOM_FIELD.served, ROOM_FIELD.opened, ROOM_FIELD.lobbyCount];

export function decodeRoomCounters(values: ReadonlyArray<string | null>): RoomCounters {
  return {
    served: Number(values[0] ?? 0),
    opened: values[1] === '1',
    lobbyCount: Number(values[2] ?? 0),
  };
}
