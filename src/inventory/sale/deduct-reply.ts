/**
 * The deduct's replies (lua/deduct-7.lua, lua/deductFree-11.lua): the reply table the scripts are
 * rendered with, and the decoding of a reply into a typed answer, the shopper bucket's state (a
 * last element, when the call took a cell) decoded as lua/rateLimit-1.lua's reply.
 */
import { rateDecision, type RateDecision } from '../../redis/rate-limit.js';
import { isOrderEntry } from '../records/marker.js';

export const DEDUCT_REPLY = {
  ok: 0,
  limit: 1,
  empty: 2,
  notStarted: 3,
  ended: 4,
  staleFence: 5,
  staleEpoch: 6,
  spill: 7,
  claimBusy: 8,
  unknown: 9,
  voided: 10,
  untouched: 11,
  contended: 12,
  rateLimited: 13,
} as const;

/** The route whose shopper bucket a purchase's home deduct takes (lua/deduct-7.lua KEYS[7]). */
export const PURCHASE_ROUTE = 'seckill';

type ReplyName = keyof typeof DEDUCT_REPLY;
const REPLY_NAME = new Map<number, ReplyName>(
  Object.entries(DEDUCT_REPLY).map(([name, code]) => [code, name as ReplyName]),
);

function replyName(code: unknown): ReplyName {
  const name = REPLY_NAME.get(Number(code));
  if (name === undefined) throw new Error(`script deduct: unexpected reply ${String(code)}`);
  return name;
}

/** A deduct's answer, with the shopper's bucket's answer when the call asked it for a cell. */
export type DeductReply = DeductOutcome & { bucket?: RateDecision | undefined };

export type DeductOutcome =
  | { code: 'ok'; outboxId: string; remaining: number }
  | { code: 'limit'; lastOrderId: string | undefined; units: number }
  | { code: 'empty'; remaining: number }
  | { code: 'not-started'; startsAt: number }
  | { code: 'ended'; endsAt: number }
  | { code: 'stale-fence'; lastFence: number }
  | { code: 'stale-epoch'; epoch: number }
  | { code: 'spill'; remaining: number }
  | { code: 'claim-busy'; orderId: string }
  | { code: 'unknown' }
  | { code: 'voided' }
  | { code: 'untouched' }
  /** deductFree only: the segment lock is held, waited for or kept for a woken waiter */
  | { code: 'contended' }
  /** the shopper's bucket refused the cell: nothing changed */
  | { code: 'rate-limited' };

export type Raw = [number, ...(string | number | number[])[]];

/** A reply, its bucket state (a last element that is an array) taken off. */
export function decodeDeduct(raw: Raw): DeductReply {
  const last = raw[raw.length - 1];
  if (!Array.isArray(last)) return decodeOutcome(raw);
  return { ...decodeOutcome(raw.slice(0, -1) as Raw), bucket: decodeBucket(last) };
}

/** A reply's bucket state: {taken, remaining, resetUs, retryUs} (includes/gcra.lua). */
export function decodeBucket(state: readonly (string | number)[]): RateDecision {
  // lua/rateLimit-1.lua's reply, its code put last
  const [taken, remaining, resetUs, retryUs] = state.map(Number);
  return rateDecision(taken! > 0, [0, remaining!, resetUs!, retryUs!, taken!]);
}

function decodeOutcome(raw: Raw): DeductOutcome {
  switch (replyName(raw[0])) {
    case 'ok':
      return { code: 'ok', outboxId: String(raw[1]), remaining: Number(raw[2]) };
    case 'limit':
      return {
        code: 'limit',
        lastOrderId: raw[1] && isOrderEntry(String(raw[1])) ? String(raw[1]) : undefined,
        units: Number(raw[2]),
      };
    case 'empty':
      return { code: 'empty', remaining: Number(raw[1]) };
    case 'notStarted':
      return { code: 'not-started', startsAt: Number(raw[1]) };
    case 'ended':
      return { code: 'ended', endsAt: Number(raw[1]) };
    case 'staleFence':
      return { code: 'stale-fence', lastFence: Number(raw[1]) };
    case 'staleEpoch':
      return { code: 'stale-epoch', epoch: Number(raw[1]) };
    case 'spill':
      return { code: 'spill', remaining: Number(raw[1]) };
    case 'claimBusy':
      return { code: 'claim-busy', orderId: String(raw[1]) };
    case 'unknown':
      return { code: 'unknown' };
    case 'voided':
      return { code: 'voided' };
    case 'untouched':
      return { code: 'untouched' };
    case 'contended':
      return { code: 'contended' };
    case 'rateLimited':
      return { code: 'rate-limited' };
  }
}
