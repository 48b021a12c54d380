/**
 * The lock protocol's gateway: every lock script with its key order, arguments and reply table,
 * the decoding of its reply, and the few plain reads of the lock's keys (hold count, lease). Lua (lua/lock*.lua, lua/fairLockAcquire-5.lua) holds the
 * protocol; this module only chooses keys and arguments.
 */
import { sendNow, type RedisClient } from '../redis/connection.js';
import type { LockKeys } from '../redis/keys.js';
import { luaScript, type LuaScript } from '../redis/scripts.js';
import { DEFAULT_LOCK_SETTINGS } from './settings.js';

const ACQUIRE_REPLY = { acquired: 0, reentered: 1, busy: 2 } as const;
const RELEASE_REPLY = { stillHeld: 0, released: 1, notHeld: 2 } as const;

const scripts = {
  acquire: luaScript('lockAcquire', ACQUIRE_REPLY),
  fairAcquire: luaScript('fairLockAcquire', ACQUIRE_REPLY),
  release: luaScript('lockRelease', RELEASE_REPLY),
  renew: luaScript('lockRenew'),
  forceUnlock: luaScript('lockForceUnlock'),
  leaveLine: luaScript('lockLeaveLine'),
};

/**
 * Runs a lock script (`LuaScript.run`: a plain EVALSHA, sent again through EVAL on NOSCRIPT).
 * @param urgent - sent at the end of this tick, not with the event-loop turn's batch
 *   ({@link sendNow}): a lock is held, or kept for a woken waiter, until it arrives (a release,
 *   an attempt from the line).
 */
function call<T>(
  script: Pick<LuaScript, 'run'>,
  redis: RedisClient,
  keys: readonly string[],
  args: readonly (string | number)[],
  urgent = false,
): Promise<T> {
  return urgent
    ? sendNow(() => script.run<T>(redis, keys, args))
    : script.run<T>(redis, keys, args);
}

export type AcquireReply =
  | { code: 'acquired'; fence: number; count: 1 }
  | { code: 'reentered'; fence: number; count: number }
  /** waitMs: holder's remaining lease (-1: none), or what is left of another's reservation or place */
  | { code: 'busy'; waitMs: number };

export type ReleaseReply =
  | { code: 'still-held'; count: number }
  /** woken: owner id of the waiter that was woken (the lock is kept for it), if any */
  | { code: 'released'; woken: string | undefined }
  | { code: 'not-held' };

// Key order of every script but renew, built once per LockKeys object.
const keyLists = new WeakMap<LockKeys, { line: string[]; fair: string[]; notice: string[] }>();
function keyList(lockKeys: LockKeys, which: 'line' | 'fair' | 'notice'): string[] {
  let lists = keyLists.get(lockKeys);
  if (!lists) {
    lists = {
      line: [lockKeys.lock, lockKeys.fence, lockKeys.queue, lockKeys.handoff],
      fair: [lockKeys.lock, lockKeys.fence, lockKeys.queue, lockKeys.handoff, lockKeys.channel],
      notice: [lockKeys.lock, lockKeys.channel, lockKeys.queue, lockKeys.handoff],
    };
    keyLists.set(lockKeys, lists);
  }
  return lists[which];
}

function acquireReply(reply: number[]): AcquireReply {
  switch (scripts.acquire.replyName(reply[0])) {
    case 'acquired':
      return { code: 'acquired', fence: reply[1]!, count: 1 };
    case 'reentered':
      return { code: 'reentered', fence: reply[1]!, count: reply[2]! };
    case 'busy':
      return { code: 'busy', waitMs: reply[1]! };
  }
}

/**
 * Default mode (a free lock goes to whoever asks first, unless it is kept for a woken waiter).
 * @param wait - > 0: join the line when busy (the caller will wait); 0: a single attempt.
 * @param inLine - the caller joined the line before (it leaves it when it takes the lock).
 * @param mayReenter - false when `owner` cannot hold the lock already (a fresh handle's owner):
 *   a held lock is then answered busy without the re-entry check.
 */
export function acquire(
  redis: RedisClient,
  lockKeys: LockKeys,
  owner: string,
  leaseMs: number,
  wait = 0,
  inLine = false,
  mayReenter = true,
): Promise<AcquireReply> {
  // then() rather than async/await: one promise less on the hottest path. An attempt of a caller
  // in line (a woken waiter's: the lock is kept idle for it until this arrives) is sent at once; a
  // first attempt holds nothing up and leaves with the event-loop turn's batch (one write system
  // call for the turn, which costs more than the script)
  return call<number[]>(
    scripts.acquire,
    redis,
    keyList(lockKeys, 'line'),
    [leaseMs, owner, wait > 0 ? 1 : 0, inLine ? 1 : 0, mayReenter ? 1 : 0],
    inLine,
  ).then(acquireReply);
}

/**
 * Fair mode (first come, first served): the script call; `fairAcquire` in strategies.ts is the
 * strategy over it. Parameters and sending as {@link acquire}.
 */
export function acquireFair(
  redis: RedisClient,
  lockKeys: LockKeys,
  owner: string,
  leaseMs: number,
  wait = 0,
  inLine = false,
  handoffMs = DEFAULT_LOCK_SETTINGS.handoffMs,
  mayReenter = true,
): Promise<AcquireReply> {
  return call<number[]>(
    scripts.fairAcquire,
    redis,
    keyList(lockKeys, 'fair'),
    [leaseMs, owner, wait > 0 ? 1 : 0, inLine ? 1 : 0, handoffMs, mayReenter ? 1 : 0],
    inLine,
  ).then(acquireReply);
}

function releaseReply(reply: [number, (number | string)?]): ReleaseReply {
  switch (scripts.release.replyName(reply[0])) {
    case 'stillHeld':
      return { code: 'still-held', count: Number(reply[1]) };
    case 'released':
      return { code: 'released', woken: reply[1] ? String(reply[1]) : undefined };
    case 'notHeld':
      return { code: 'not-held' };
  }
}

export function release(
  redis: RedisClient,
  lockKeys: LockKeys,
  owner: string,
  processId: string,
  handoffMs = DEFAULT_LOCK_SETTINGS.handoffMs,
): Promise<ReleaseReply> {
  // sent at once: the lock is held until it arrives
  return call<[number, (number | string)?]>(
    scripts.release,
    redis,
    keyList(lockKeys, 'notice'),
    [owner, processId, handoffMs],
    true,
  ).then(releaseReply);
}

/** Holds `owner` has on the lock (0: none; the lock is free or another owner's). */
export async function holdCount(
  redis: RedisClient,
  keys: LockKeys,
  owner: string,
): Promise<number> {
  return Number((await redis.hget(keys.lock, owner)) ?? 0);
}

/** Whether anyone holds the lock. */
export async function isLocked(redis: RedisClient, keys: LockKeys): Promise<boolean> {
  return (await redis.exists(keys.lock)) === 1;
}

/** Remaining lease in ms; null when not locked, Infinity when locked without a lease. */
export async function remainingLease(redis: RedisClient, keys: LockKeys): Promise<number | null> {
  const ttl = await redis.pttl(keys.lock);
  return ttl === -2 ? null : ttl === -1 ? Infinity : ttl;
}

/** @returns true when renewed, false when the lock is gone or held by someone else. */
export async function renew(
  redis: RedisClient,
  lockKeys: LockKeys,
  owner: string,
  leaseMs: number,
): Promise<boolean> {
  return (await call<number>(scripts.renew, redis, [lockKeys.lock], [owner, leaseMs])) === 1;
}

/** @returns whether a lock was deleted, and the waiter woken. */
export async function forceUnlock(
  redis: RedisClient,
  lockKeys: LockKeys,
  processId: string,
  handoffMs = DEFAULT_LOCK_SETTINGS.handoffMs,
): Promise<{ deleted: boolean; woken: string | undefined }> {
  const [deleted, woken] = await call<[number, string]>(
    scripts.forceUnlock,
    redis,
    keyList(lockKeys, 'notice'),
    [processId, handoffMs],
  );
  return { deleted: deleted === 1, woken: woken || undefined };
}

/** A waiter that gives up leaves the line (and wakes the next one if the lock is free). */
export async function leaveLine(
  redis: RedisClient,
  lockKeys: LockKeys,
  owner: string,
  processId: string,
  handoffMs = DEFAULT_LOCK_SETTINGS.handoffMs,
): Promise<{ left: boolean; woken: string | undefined }> {
  const [left, woken] = await call<[number, string]>(
    scripts.leaveLine,
    redis,
    keyList(lockKeys, 'notice'),
    [owner, processId, handoffMs],
  );
  return { left: left === 1, woken: woken || undefined };
}
