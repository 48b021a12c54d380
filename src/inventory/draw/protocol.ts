/**
 * The gateway of the draw's scripts (lua/drawEnter-2.lua, lua/drawWithdraw-2.lua,
 * lua/drawClose-1.lua, lua/drawLine-4.lua): their key order, arguments and reply tables. The draw
 * hash's fields are DRAW_FIELD's (records/hash-fields.ts, lua/includes/drawState.lua).
 */
import type { RedisClient } from '../../redis/connection.js';
import type { DrawKeys, RoomKeys } from '../../redis/keys.js';
import { luaScript } from '../../redis/scripts.js';

const ENTER_REPLY = { entered: 1, held: 0, early: -1, closed: -2, full: -3 } as const;
const WITHDRAW_REPLY = { withdrawn: 1, none: 0, closed: -2 } as const;
const CLOSE_REPLY = { closed: 1, early: 0, fenced: -1 } as const;
const LINE_REPLY = { written: 1, had: 0, fenced: -1 } as const;
const scripts = {
  enter: luaScript('drawEnter', ENTER_REPLY),
  withdraw: luaScript('drawWithdraw', WITHDRAW_REPLY),
  close: luaScript('drawClose', CLOSE_REPLY),
  line: luaScript('drawLine', LINE_REPLY),
};

export type EnterReply =
  | { code: 'entered' | 'held'; entryId: string; count: number }
  | { code: 'early'; msToOpen: number }
  | { code: 'closed' }
  | { code: 'full'; count: number };

export interface EnterCall {
  userId: string;
  /** the id a new entry takes */
  entryId: string;
  /** the client's address block ('' when unknown) */
  block: string;
  openAt: number;
  closeAt: number;
  keepSeconds: number;
  maxEntries: number;
}

export async function enterDraw(
  redis: RedisClient,
  keys: DrawKeys,
  call: EnterCall,
): Promise<EnterReply> {
  const r = await scripts.enter.run<Array<number | string>>(
    redis,
    [keys.draw, keys.entries],
    [
      call.userId,
      call.entryId,
      call.block,
      call.openAt,
      call.closeAt,
      call.keepSeconds,
      call.maxEntries,
    ],
  );
  const code = scripts.enter.replyName(r[0]);
  switch (code) {
    case 'entered':
    case 'held':
      return { code, entryId: String(r[1]), count: Number(r[2]) };
    case 'early':
      return { code, msToOpen: Number(r[1]) };
    case 'full':
      return { code, count: Number(r[1]) };
    default:
      return { code: 'closed' };
  }
}

export async function withdrawEntry(
  redis: RedisClient,
  keys: DrawKeys,
  userId: string,
  closeAt: number,
): Promise<{ code: 'withdrawn' | 'none' | 'closed'; entryId: string }> {
  const r = await scripts.withdraw.run<Array<number | string>>(
    redis,
    [keys.draw, keys.entries],
    [userId, closeAt],
  );
  return { code: scripts.withdraw.replyName(r[0]), entryId: String(r[1] ?? '') };
}

export type CloseReply =
  | { code: 'closed'; closedAt: number; count: number; seq: number }
  | { code: 'early'; msToClose: number }
  | { code: 'fenced'; newer: number };

export async function closeDraw(
  redis: RedisClient,
  keys: DrawKeys,
  fence: number,
  closeAt: number,
): Promise<CloseReply> {
  const r = await scripts.close.run<number[]>(redis, [keys.draw], [fence, closeAt]);
  const code = scripts.close.replyName(r[0]);
  if (code === 'closed') return { code, closedAt: r[1]!, count: r[2]!, seq: r[3]! };
  if (code === 'early') return { code, msToClose: r[1]! };
  return { code, newer: r[1]! };
}

export async function writeLine(
  redis: RedisClient,
  room: RoomKeys,
  draw: DrawKeys,
  call: { fence: number; firstTicket: number; keepSeconds: number; shoppers: readonly string[] },
): Promise<{ code: 'written' | 'had' | 'fenced'; last: number }> {
  const r = await scripts.line.run<number[]>(
    redis,
    [room.room, room.places, room.line, draw.draw],
    [call.fence, call.firstTicket, call.keepSeconds, ...call.shoppers],
  );
  return { code: scripts.line.replyName(r[0]), last: r[1]! };
}
