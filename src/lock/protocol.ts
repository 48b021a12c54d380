/**
 * The lock protocol's gateway: every lock script with its key order and arguments, side by side,
 * and the decoding of its reply. Lua (lua/lock*.lua, lua/fairLockAcquire-4.lua) holds the
 * protocol; this module only chooses keys and arguments.
 */
import type { Redis } from 'ioredis';
import type { LockKeys } from '../redis/keys.js';
import { runScript } from '../redis/scripts.js';

export type AcquireReply =
  | { code: 'acquired'; fence: number; count: 1 }
  | { code: 'reentered'; fence: number; count: number }
  /** waitMs: holder's remaining lease (-1: none) or, fair mode, until the line's head lapses */
  | { code: 'busy'; waitMs: number };

export type ReleaseReply =
  | { code: 'still-held'; count: number }
  /** woken: owner id of the waiter that was woken, if any */
  | { code: 'released'; woken: string | undefined }
  | { code: 'not-held' };

// Key order of the two script families, built once per LockKeys object.
const keyLists = new WeakMap<LockKeys, { line: string[]; notice: string[] }>();
function keyList(k: LockKeys, which: 'line' | 'notice'): string[] {
  let lists = keyLists.get(k);
  if (!lists) {
    lists = {
      line: [k.lock, k.fence, k.queue, k.queueDeadlines],
      notice: [k.lock, k.channel, k.queue, k.queueDeadlines],
    };
    keyLists.set(k, lists);
  }
  return lists[which];
}
const lineKeys = (k: LockKeys) => keyList(k, 'line');
const noticeKeys = (k: LockKeys) => keyList(k, 'notice');

function acquireReply(r: number[]): AcquireReply {
  switch (r[0]) {
    case 0:
      return { code: 'acquired', fence: r[1]!, count: 1 };
    case 1:
      return { code: 'reentered', fence: r[1]!, count: r[2]! };
    case 2:
      return { code: 'busy', waitMs: r[1]! };
    default:
      throw new Error(`unexpected lock acquire reply ${JSON.stringify(r)}`);
  }
}

/**
 * Default mode (a free lock goes to whoever asks first).
 * @param placeMs - 0: do not wait; else join the line and keep the place this long.
 */
export async function acquire(
  redis: Redis,
  k: LockKeys,
  owner: string,
  leaseMs: number,
  placeMs = 0,
): Promise<AcquireReply> {
  return acquireReply(
    await runScript<number[]>(redis, 'lockAcquire', lineKeys(k), [leaseMs, owner, placeMs]),
  );
}

/** Fair mode (first come, first served). */
export async function fairAcquire(
  redis: Redis,
  k: LockKeys,
  owner: string,
  leaseMs: number,
  placeMs: number,
): Promise<AcquireReply> {
  return acquireReply(
    await runScript<number[]>(redis, 'fairLockAcquire', lineKeys(k), [leaseMs, owner, placeMs]),
  );
}

export async function release(
  redis: Redis,
  k: LockKeys,
  owner: string,
  processId: string,
): Promise<ReleaseReply> {
  const r = await runScript<[number, (number | string)?]>(redis, 'lockRelease', noticeKeys(k), [
    owner,
    processId,
  ]);
  switch (r[0]) {
    case 0:
      return { code: 'still-held', count: Number(r[1]) };
    case 1:
      return { code: 'released', woken: r[1] ? String(r[1]) : undefined };
    case 2:
      return { code: 'not-held' };
    default:
      throw new Error(`unexpected lock release reply ${JSON.stringify(r)}`);
  }
}

/** @returns true when renewed, false when the lock is gone or held by someone else. */
export async function renew(
  redis: Redis,
  k: LockKeys,
  owner: string,
  leaseMs: number,
): Promise<boolean> {
  return (await runScript<number>(redis, 'lockRenew', [k.lock], [owner, leaseMs])) === 1;
}

/** @returns whether a lock was deleted, and the waiter woken. */
export async function forceUnlock(
  redis: Redis,
  k: LockKeys,
  processId: string,
): Promise<{ deleted: boolean; woken: string | undefined }> {
  const [deleted, woken] = await runScript<[number, string]>(
    redis,
    'lockForceUnlock',
    noticeKeys(k),
    [processId],
  );
  return { deleted: deleted === 1, woken: woken || undefined };
}

/** A waiter that gives up leaves the line (and wakes the next one if the lock is free). */
export async function leaveLine(
  redis: Redis,
  k: LockKeys,
  owner: string,
  processId: string,
): Promise<{ left: boolean; woken: string | undefined }> {
  const [left, woken] = await runScript<[number, string]>(redis, 'lockLeaveLine', noticeKeys(k), [
    owner,
    processId,
  ]);
  return { left: left === 1, woken: woken || undefined };
}
