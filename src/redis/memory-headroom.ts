/**
 * How close each Redis master is to its maxmemory, for the writes that give way first
 * (docs/catalogue.md#redis-memory): a new waiting-room place, an Idempotency-Key record of a
 * refusal. Redis runs with noeviction, so past maxmemory it refuses every write that may grow it;
 * the sale's own scripts are flagged allow-oom and keep writing. What gives way is asked to stop
 * before that, at `shedAt` of maxmemory, so the memory left stays for the sale and its orders'
 * queue (BullMQ, whose scripts Redis refuses past the limit).
 *
 * Read from `INFO memory` of the node holding the key asked about, at most once per SAMPLE_MS and
 * only when asked (an idle process reads nothing); the answer is the last reading, never a wait.
 * A node that answered OOM counts as full until a reading says otherwise.
 */
import { Cluster } from 'ioredis';
import { inBackground } from './background.js';
import type { RedisClient } from './connection.js';
import { shardOfKey } from './shard-health.js';

/** A node's memory is read again when its last reading is older than this. */
export const SAMPLE_MS = 250;

/** A field of an INFO section, as a number (NaN when absent). */
export const infoField = (info: string, field: string) =>
  Number(new RegExp(`^${field}:(\\d+)`, 'm').exec(info)?.[1]);

/** Whether `err` is Redis refusing a write past its maxmemory (noeviction). */
export function outOfMemory(err: unknown): boolean {
  return err instanceof Error && err.message.startsWith('OOM ');
}

interface Reading {
  /** used_memory / maxmemory at the last reading (0: no maxmemory, or none yet) */
  ratio: number;
  at: number;
  reading: boolean;
}

export class MemoryHeadroom {
  private readonly nodes = new Map<string, Reading>();

  constructor(
    private readonly redis: RedisClient,
    /** share of maxmemory from which what gives way is refused (1: only once Redis refuses) */
    private readonly shedAt: number,
    private readonly sampleMs = SAMPLE_MS,
  ) {}

  /**
   * Whether the node holding `key` was, at its last reading, past `shedAt` of its maxmemory (or
   * answered OOM since). Reads it again in the background when that reading is stale.
   */
  short(key: string): boolean {
    const node = shardOfKey(this.redis, key) ?? '';
    let r = this.nodes.get(node);
    if (!r) this.nodes.set(node, (r = { ratio: 0, at: 0, reading: false }));
    if (!r.reading && Date.now() - r.at >= this.sampleMs) this.read(node, r);
    return r.ratio >= this.shedAt;
  }

  /** The node holding `key` refused a write past its maxmemory: full until the next reading. */
  refused(key: string): void {
    const node = shardOfKey(this.redis, key) ?? '';
    const r = this.nodes.get(node);
    if (r) r.ratio = Math.max(r.ratio, 1);
    else this.nodes.set(node, { ratio: 1, at: Date.now(), reading: false });
  }

  private read(node: string, r: Reading): void {
    const conn =
      this.redis instanceof Cluster
        ? this.redis.nodes('master').find((n) => `${n.options.host}:${n.options.port}` === node)
        : this.redis;
    if (!conn) return;
    r.reading = true;
    inBackground('memory headroom', () => conn.info('memory'))
      .then((info) => {
        const max = infoField(info, 'maxmemory');
        r.ratio = max > 0 ? infoField(info, 'used_memory') / max : 0;
      })
      // a node that does not answer keeps its last reading: its writes fail on their own
      .catch(() => undefined)
      .finally(() => {
        r.at = Date.now();
        r.reading = false;
      });
  }
}
