/**
 * Durable mode (REDIS_WAIT_REPLICAS=N): a sale is answered only once N replicas of its segment's
 * master hold it, so a failover to one of them cannot lose an acknowledged sale. WAIT covers every
 * write the connection sent before it, so the sales of one moment share one WAIT per master (a
 * group commit): a sale arriving while a WAIT is out joins the next one.
 */
import { shardOfKey } from './shard-health.js';
import { Cluster, type Redis, type RedisClient } from './connection.js';

/** The replicas did not confirm in time: the sale stands on the master, but is not yet safe. */
export class ReplicaLagError extends Error {
  override name = 'ReplicaLagError';
}

interface Round {
  promise: Promise<void>;
  resolve(): void;
  reject(err: unknown): void;
}

function round(): Round {
  let resolve!: () => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<void>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

/**
 * How much longer than WAIT's own timeout a round may take before it is given up client-side:
 * a WAIT sent on the connection of a master that just died, or queued behind a lost reply, may
 * never be answered, and the next round must not wait behind it for good.
 */
const ROUND_MARGIN_MS = 1_000;

interface MasterState {
  inFlight: boolean;
  next: Round | undefined;
}

export class ReplicaWait {
  /**
   * per master connection: the WAIT out now, and the round waiting for the next one. Weak: a
   * dead node's connection leaves the cluster client's pool, and its state goes with it.
   */
  private readonly state = new WeakMap<Redis, MasterState>();

  constructor(
    private readonly redis: RedisClient,
    readonly replicas: number,
    private readonly timeoutMs: number,
  ) {}

  /**
   * Resolves once `replicas` replicas of the master holding `key` have every write this process
   * sent it so far (the caller's sale among them).
   * @throws ReplicaLagError when fewer confirm within the timeout
   */
  confirm(key: string): Promise<void> {
    const conn = this.connectionFor(key);
    let s = this.state.get(conn);
    if (!s) this.state.set(conn, (s = { inFlight: false, next: undefined }));
    const joined = (s.next ??= round());
    if (!s.inFlight) void this.send(conn, s);
    return joined.promise;
  }

  private async send(conn: Redis, state: MasterState) {
    const r = state.next!;
    state.next = undefined;
    state.inFlight = true;
    let timer: NodeJS.Timeout | undefined;
    try {
      const giveUp = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () =>
            reject(
              new ReplicaLagError(
                `no answer to WAIT within ${this.timeoutMs + ROUND_MARGIN_MS} ms (its master may be gone)`,
              ),
            ),
          this.timeoutMs + ROUND_MARGIN_MS,
        );
      });
      const acked = (await Promise.race([
        conn.call('WAIT', this.replicas, this.timeoutMs),
        giveUp,
      ])) as number;
      if (acked >= this.replicas) r.resolve();
      else {
        r.reject(
          new ReplicaLagError(
            `${acked} of ${this.replicas} replica(s) confirmed the sale within ${this.timeoutMs} ms`,
          ),
        );
      }
    } catch (err) {
      r.reject(err);
    } finally {
      clearTimeout(timer);
      state.inFlight = false;
      if (state.next) void this.send(conn, state);
    }
  }

  /** The master holding `key` ("host:port"; one name for a single Redis). */
  masterOf(key: string): string {
    return shardOfKey(this.redis, key) ?? 'redis';
  }

  /** The connection the sale's deduct went over: WAIT counts that connection's writes. */
  private connectionFor(key: string): Redis {
    if (!(this.redis instanceof Cluster)) return this.redis;
    const node = shardOfKey(this.redis, key);
    // a connection that ended (its node died) may linger until the pool notices: never WAIT on it
    const conn = this.redis
      .nodes('master')
      .find((n) => `${n.options.host}:${n.options.port}` === node && n.status !== 'end');
    if (!conn) throw new ReplicaLagError(`no connection to the master of ${key} (${node})`);
    return conn;
  }
}
