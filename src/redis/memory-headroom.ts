/**
 * How close each Redis master is to its maxmemory, for the writes that give way first
 * (docs/catalogue.md#redis-memory): a new waiting-room place, an Idempotency-Key record of a
 * refusal. Redis runs with noeviction, so past maxmemory it refuses every write that may grow it;
 * the sale's own scripts are flagged allow-oom and keep writing. What gives way is asked to stop
 * before that, at `shedAt` of maxmemory, so the memory left stays for the sale and its orders'
 * queue (BullMQ, whose scripts Redis refuses past the limit).
 *
 * Read from `INFO memory` of the node holding the key asked about, only when asked (an idle
 * process reads nothing): a reading younger than SAMPLE_MS is the answer; one younger than
 * TRUSTED_MS is the answer while a new one is read in the background; none, or an older one,
 * is waited for (one INFO, on the key's node). A node that answered OOM counts as full until a
 * reading says otherwise.
 */
import { Cluster } from 'ioredis';
import { inBackground } from './background.js';
import type { RedisClient } from './connection.js';
import { shardOfKey } from './shard-health.js';

/** A node's memory is read again when its last reading is older than this. */
export const SAMPLE_MS = 250;
/** A reading older than this is not answered from: the caller waits for a new one. */
export const TRUSTED_MS = 5_000;

/** A field of an INFO section, as a number (NaN when absent). */
export const infoField = (info: string, field: string) =>
  Number(new RegExp(`^${field}:(\\d+)`, 'm').exec(info)?.[1]);

interface Reading {
  /** used_memory / maxmemory at the last reading (0: no maxmemory) */
  ratio: number;
  /** when it was read (0: never) */
  at: number;
  /** the read under way */
  pending: Promise<void> | undefined;
}

export class MemoryHeadroom {
  private readonly nodes = new Map<string, Reading>();

  constructor(
    private readonly redis: RedisClient,
    /** share of maxmemory from which what gives way is refused (1: only once Redis refuses) */
    private readonly shedAt: number,
    private readonly sampleMs = SAMPLE_MS,
  ) {}

  /** Whether the node holding `key` is past `shedAt` of its maxmemory (or answered OOM since). */
  short(key: string): boolean | Promise<boolean> {
    const r = this.node(key);
    const age = Date.now() - r.at;
    if (age < this.sampleMs) return r.ratio >= this.shedAt;
    const read = (r.pending ??= this.read(key, r));
    if (age < TRUSTED_MS) return r.ratio >= this.shedAt;
    return read.then(() => r.ratio >= this.shedAt);
  }

  /** The node holding `key` refused a write past its maxmemory: full until the next reading. */
  refused(key: string): void {
    const r = this.node(key);
    r.ratio = Math.max(r.ratio, 1);
    r.at = Date.now();
  }

  private node(key: string): Reading {
    const node = shardOfKey(this.redis, key) ?? '';
    let r = this.nodes.get(node);
    if (!r) this.nodes.set(node, (r = { ratio: 0, at: 0, pending: undefined }));
    return r;
  }

  private read(key: string, reading: Reading): Promise<void> {
    const node = shardOfKey(this.redis, key);
    const conn =
      this.redis instanceof Cluster
        ? this.redis.nodes('master').find((n) => `${n.options.host}:${n.options.port}` === node)
        : this.redis;
    return (
      inBackground('memory headroom', () => conn?.info('memory') ?? Promise.resolve(''))
        .then((info) => {
          const max = infoField(info, 'maxmemory');
          reading.ratio = max > 0 ? infoField(info, 'used_memory') / max : 0;
        })
        // a node that does not answer keeps its last reading: its writes fail on their own
        .catch(() => undefined)
        .finally(() => {
          reading.at = Date.now();
          reading.pending = undefined;
        })
    );
  }
}
