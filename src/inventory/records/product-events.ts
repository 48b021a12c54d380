/**
 * Messages on a product's events channel (sharded pub/sub), how API processes keep each other's
 * catalogue in step:
 *
 *   empty <epoch> <segment>   a segment ran out: skip it
 *   soldout <epoch>           every segment ran out: answer from memory
 *   reseed <epoch>            a new sale: forget what you knew
 *   restock <epoch> <segment> units came back to a segment: it is not empty, nor the sale sold out
 *   admit <epoch> <served> <at ms> <fence>  the waiting room admitted every ticket up to <served>
 *                             (by <at>), its admitter holding the lease of fencing token <fence>
 *   asleep <epoch> <served> <at ms> <fence> <sleep> <look in ms>  the room's admitter let go of
 *                             the room, which needs nothing until <sleep> happens (a join, a seat
 *                             freed, a notice), or until it looks again in <look in ms> (0: never)
 *   wake <epoch> <cause>      a sleeping room has work again (<cause>: a join, a seat freed, or a
 *                             holder that handed the room over): its admitters act at once
 *   changed <epoch>           an operator changed the sale (paused, resumed, ended it, its room's
 *                             pace, its units): read its meta again
 *
 * A process of an older version reads the admit notice's first four fields and ignores the kinds
 * it does not know.
 */
export type ProductEvent =
  | { kind: 'empty'; epoch: number; segment: number }
  | { kind: 'restock'; epoch: number; segment: number }
  | { kind: 'soldout'; epoch: number }
  | { kind: 'reseed'; epoch: number }
  | { kind: 'changed'; epoch: number }
  | { kind: 'admit'; epoch: number; served: number; at: number; fence: number }
  | {
      kind: 'asleep';
      epoch: number;
      served: number;
      at: number;
      fence: number;
      sleep: RoomSleep;
      lookInMs: number;
    }
  | { kind: 'wake'; epoch: number; cause: WakeCause };

/** What a sleeping room waits for (lua/includes/roomState.lua's SLEEP_ constants). */
export type RoomSleep = 'join' | 'seat' | 'notice';
/** Why a room was woken. */
export type WakeCause = 'join' | 'seat' | 'handover';

const SLEEPS: readonly string[] = ['join', 'seat', 'notice'] satisfies RoomSleep[];
const CAUSES: readonly string[] = ['join', 'seat', 'handover'] satisfies WakeCause[];

export function encodeEvent(event: ProductEvent): string {
  switch (event.kind) {
    case 'admit':
      return `admit ${event.epoch} ${event.served} ${event.at} ${event.fence}`;
    case 'asleep':
      return `asleep ${event.epoch} ${event.served} ${event.at} ${event.fence} ${event.sleep} ${event.lookInMs}`;
    case 'wake':
      return `wake ${event.epoch} ${event.cause}`;
    case 'empty':
    case 'restock':
      return `${event.kind} ${event.epoch} ${event.segment}`;
    default:
      return `${event.kind} ${event.epoch}`;
  }
}

const integers = (...texts: Array<string | undefined>): number[] | null => {
  const n = texts.map(Number);
  return n.every(Number.isInteger) ? n : null;
};

/** The event of a message; null for one this version does not know (ignored, not fatal). */
export function decodeEvent(message: string): ProductEvent | null {
  const [kind, epochText, ...rest] = message.split(' ');
  const epoch = Number(epochText);
  if (!Number.isInteger(epoch)) return null;
  if (kind === 'empty' || kind === 'restock') {
    const segment = Number(rest[0]);
    return Number.isInteger(segment) ? { kind, epoch, segment } : null;
  }
  if (kind === 'soldout' || kind === 'reseed' || kind === 'changed') return { kind, epoch };
  if (kind === 'admit') {
    // an older version's notice has no fence: 0, older than any
    const n = integers(rest[0], rest[1], rest[2] ?? '0');
    return n && { kind, epoch, served: n[0]!, at: n[1]!, fence: n[2]! };
  }
  if (kind === 'asleep') {
    const n = integers(rest[0], rest[1], rest[2], rest[4]);
    const sleep = rest[3] ?? '';
    if (!n || !SLEEPS.includes(sleep)) return null;
    const [served, at, fence, lookInMs] = n as [number, number, number, number];
    return { kind, epoch, served, at, fence, sleep: sleep as RoomSleep, lookInMs };
  }
  if (kind === 'wake') {
    const cause = rest[0] ?? '';
    return CAUSES.includes(cause) ? { kind, epoch, cause: cause as WakeCause } : null;
  }
  return null;
}
