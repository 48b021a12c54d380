/**
 * ioredis connections. Every Redis key is named by `keys.ts`, so ioredis `keyPrefix` is refused
 * (BullMQ does the same): a prefix applied behind the key module's back breaks hash tags and Lua.
 */
import type { Socket } from 'node:net';
import { Redis, type RedisOptions } from 'ioredis';
import { messageOf } from '../errors.js';
import type { Logger } from '../log.js';

export { Redis };

export type RedisRole =
  /** request path: fails fast while Redis is away instead of queueing for long */
  | 'command'
  /** one per process, pub/sub only */
  | 'subscriber'
  /** handed to BullMQ, which requires maxRetriesPerRequest: null */
  | 'bullmq';

export interface RedisConnectionOptions {
  /** Shown in CLIENT LIST and logs. */
  name: string;
  role?: RedisRole;
  logger?: Logger;
  /**
   * A command without a reply this long fails ('Command timed out'), and the connection
   * reconnects: a stalled connection must not hold every later command behind the lost reply.
   * Command role only.
   */
  commandTimeoutMs?: number | undefined;
  /** Extra ioredis options; `keyPrefix` is refused. */
  overrides?: RedisOptions;
}

/** Each connection's latest connection error, cleared when it is ready again (for readiness). */
const lastErrors = new WeakMap<Redis, string>();

/** Connection errors repeat on every reconnect attempt; log one per interval. */
const ERROR_LOG_INTERVAL_MS = 10_000;

export function createRedis(url: string, opts: RedisConnectionOptions): Redis {
  if (opts.overrides?.keyPrefix) {
    throw new Error('ioredis keyPrefix is not supported: key names come from src/redis/keys.ts');
  }
  const role = opts.role ?? 'command';
  const redis = new Redis(url, {
    connectionName: opts.name,
    // A command must not run twice after a reconnect: a resent deduct would sell twice.
    autoResendUnfulfilledCommands: false,
    // While Redis is away a queued command fails after two reconnect attempts (~0.3 s): the
    // request path answers 503 at once instead of hanging on a dead store.
    maxRetriesPerRequest: role === 'bullmq' ? null : 1,
    retryStrategy: (times) => Math.min(50 * 2 ** Math.min(times, 6), 2_000),
    ...(role === 'bullmq' && { enableReadyCheck: false }),
    ...(role === 'command' && opts.commandTimeoutMs && { commandTimeout: opts.commandTimeoutMs }),
    ...opts.overrides,
  });
  if (role !== 'subscriber') redis.on('connect', () => coalesceWrites(redis));
  if (role === 'command' && opts.commandTimeoutMs) reconnectOnTimeout(redis, opts);
  let lastLogged = 0;
  redis.on('ready', () => lastErrors.delete(redis));
  redis.on('error', (err) => {
    lastErrors.set(redis, messageOf(err));
    const now = Date.now();
    if (now - lastLogged < ERROR_LOG_INTERVAL_MS) return;
    lastLogged = now;
    opts.logger?.warn({ redis: opts.name, err: messageOf(err) }, 'redis connection error');
  });
  return redis;
}

/**
 * A command that timed out leaves its connection in doubt (stalled, or its reply lost, after
 * which every later reply would be matched to the wrong command): drop that connection and
 * reconnect, once per connection, so later commands neither queue behind it nor get another's
 * reply. Commands in flight on it fail (their callers treat that as an unknown outcome, as they
 * do the timeout itself).
 */
function reconnectOnTimeout(redis: Redis, opts: RedisConnectionOptions): void {
  let generation = 0;
  let recycled = -1;
  redis.on('connect', () => generation++);
  const send = redis.sendCommand;
  redis.sendCommand = function (this: Redis, ...args: Parameters<Redis['sendCommand']>) {
    const sentOn = generation;
    const out = send.apply(this, args);
    args[0].promise.catch((err: unknown) => {
      if (!(err instanceof Error) || err.message !== 'Command timed out') return;
      if (sentOn !== generation || recycled === sentOn) return; // that connection is gone already
      recycled = sentOn;
      opts.logger?.warn({ redis: opts.name }, 'a command timed out: reconnecting');
      redis.disconnect(true);
    });
    return out;
  } as Redis['sendCommand'];
}

/**
 * Commands sent in one tick of the event loop leave in one write: the socket is corked at the
 * first write of a tick and uncorked on the next tick (Node then writes them with one writev).
 * Under load many requests send a command in the same tick; a write system call each cost more
 * CPU than the commands themselves (bench:lock: +35-50 % sections/s on loopback). Order is kept,
 * and nothing waits longer than the current tick. ioredis' own auto-pipelining does the same with
 * more bookkeeping, and measured slower here.
 */
function coalesceWrites(redis: Redis): void {
  const stream = (redis as unknown as { stream?: Socket }).stream;
  if (!stream) return;
  const write = stream.write;
  let corked = false;
  const uncork = () => {
    corked = false;
    stream.uncork();
  };
  stream.write = function (this: Socket, ...args: Parameters<Socket['write']>) {
    if (!corked) {
      corked = true;
      stream.cork();
      process.nextTick(uncork);
    }
    return write.apply(this, args);
  } as Socket['write'];
}

/**
 * Readiness: needs a PONG. A connection that is down says why at once (the connection error, not
 * "max retries"); one still coming up for the first time gets the caller's timeout to answer.
 */
export async function pingRedis(redis: Redis): Promise<void> {
  if (redis.status === 'end') throw new Error('redis connection is closed');
  const down = redis.status !== 'ready' && lastErrors.get(redis);
  if (down) throw new Error(`unreachable (${down})`);
  try {
    await redis.ping();
  } catch (err) {
    // a first ping on a connection that never came up: name why, not "max retries"
    const why = lastErrors.get(redis);
    throw why ? new Error(`unreachable (${why})`) : err;
  }
}

/** QUIT politely, DISCONNECT if Redis is unreachable. */
export async function closeRedis(redis: Redis): Promise<void> {
  if (redis.status === 'end') return;
  if (redis.status !== 'ready') {
    redis.disconnect();
    return;
  }
  try {
    await redis.quit();
  } catch {
    redis.disconnect();
  }
}
