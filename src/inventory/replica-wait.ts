/**
 * Durable mode (REDIS_WAIT_REPLICAS=N): a sale is answered only once N replicas of its segment's
 * master hold it, so a failover to one of them cannot lose an acknowledged sale. WAIT covers every
 * write the connection sent before it, so the sales of one moment share one WAIT per master (a
 * group commit): a sale arriving while a WAIT is out joins the next one.
 */
import { nodeOfKey } from '../redis/batch.js';
import { Cluster, type Redis, type RedisClient } from '../redis/connection.js';

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

export class ReplicaWait {
  /** per master connection: the WAIT out now, and the round waiting for the next one */
  private readonly state = new Map<Redis, { inFlight: boolean; next: Round | undefined }>();

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

  private async send(conn: Redis, s: { inFlight: boolean; next: Round | undefined }) {
    const r = s.next!;
    s.next = undefined;
    s.inFlight = true;
    try {
      const acked = (await conn.call('WAIT', this.replicas, this.timeoutMs)) as number;
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
      s.inFlight = false;
      if (s.next) void this.send(conn, s);
    }
  }

  /** The connection the sale's deduct went over: WAIT counts that connection's writes. */
  private connectionFor(key: string): Redis {
    if (!(this.redis instanceof Cluster)) return this.redis;
    const node = nodeOfKey(this.redis, key);
    const conn = this.redis
      .nodes('master')
      .find((n) => `${n.options.host}:${n.options.port}` === node);
    if (!conn) throw new ReplicaLagError(`no connection to the master of ${key} (${node})`);
    return conn;
  }
}
