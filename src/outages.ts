/**
 * Whether an error means a store (Redis or PostgreSQL) is away, slow or dropped the connection,
 * rather than a bug: the one place that knows the drivers' error shapes (ioredis, pg), so every
 * route answers such an error with a 503 the client may retry, never a 500.
 */

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENOTFOUND',
  // PostgreSQL: statement timeout, admin shutdown, cannot connect now, connection failures
  '57014',
  '57P01',
  '57P03',
  '08000',
  '08001',
  '08003',
  '08006',
]);

const OUTAGE_MESSAGES = [
  // ioredis
  /Connection is closed/,
  /Command timed out/,
  /Stream isn't writeable/,
  /Reached the max retries per request limit/,
  /CLUSTERDOWN|TRYAGAIN|LOADING/,
  // a cluster slot whose master is gone and whose redirections go round
  /Too many Cluster redirections/,
  // pg
  /Connection terminated/,
  /timeout exceeded when trying to connect/,
  /Query read timeout/,
  /Client has encountered a connection error/,
  /the database system is (starting up|shutting down)/,
];

/** The reason, when `err` (or its cause) is a store outage; undefined for anything else. */
export function storeOutage(err: unknown, depth = 0): string | undefined {
  if (!(err instanceof Error) || depth > 3) return undefined;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && NETWORK_CODES.has(code)) return err.message;
  if (
    err.name === 'MaxRetriesPerRequestError' ||
    err.name === 'ReplicaLagError' ||
    err.name === 'DeadlineError' ||
    err.name === 'ShardDownError'
  )
    return err.message;
  if (OUTAGE_MESSAGES.some((m) => m.test(err.message))) return err.message;
  return storeOutage(err.cause, depth + 1);
}

/**
 * Whether `err` is Redis refusing a write past its maxmemory (noeviction), alone or in a MULTI it
 * discarded: the store is up but full (docs/catalogue.md#redis-memory). Not an outage: a shard
 * breaker must not hold a full shard down, the sale's scripts write on there.
 */
export function storeFull(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (err.message.startsWith('OOM ')) return true;
  const previous = (err as { previousErrors?: unknown }).previousErrors;
  return Array.isArray(previous) && previous.some(storeFull);
}

/** A store call that did not settle within its bound (see `withinDeadline`). */
export class DeadlineError extends Error {
  override name = 'DeadlineError';
}

/**
 * `work`, or a DeadlineError once `ms` have passed. Background work (sweeps, expiries) bounds
 * every call on a store with it: a call queued on a connection that never settles (a dead
 * node's, a cluster client's offline queue, BullMQ's connection, which waits forever by design)
 * must not hold the job, and the worker slot it occupies, for good. The call itself is not
 * cancelled: whatever it does later is idempotent (scripts, job ids, ON CONFLICT).
 */
export function withinDeadline<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DeadlineError(`${what}: no answer within ${ms} ms`)), ms);
  });
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
}

/**
 * A command refused before it was sent: its Redis shard ("host:port") failed a moment ago and has
 * not answered a probe since (src/redis/shard-health.ts). Nothing ran, so the caller knows the
 * outcome (unlike a timeout): a sale sold nothing, a write wrote nothing.
 */
export class ShardDownError extends Error {
  override name = 'ShardDownError';
  constructor(readonly shard: string) {
    super(`Redis shard ${shard} is not answering: the command was not sent`);
  }
}

/** The shard named by `err` (or its cause) when it is a command refused unsent; else undefined. */
export function shardDown(err: unknown, depth = 0): string | undefined {
  if (err instanceof ShardDownError) return err.shard;
  if (!(err instanceof Error) || depth > 3) return undefined;
  return shardDown(err.cause, depth + 1);
}
