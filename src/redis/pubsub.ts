/**
 * One subscriber connection per process, shared by every lock waiter and cache: sharded pub/sub
 * (SSUBSCRIBE), so on a Redis Cluster a channel lives on the shard of its hash tag. Channels are
 * reference-counted; an unused channel stays subscribed for a while, so a hot lock's waiters do
 * not pay SSUBSCRIBE/SUNSUBSCRIBE on every contended acquire.
 */
import type { RedisClient } from './connection.js';

type Handler = (message: string) => void;

interface Channel {
  handlers: Set<Handler>;
  ready: Promise<void>;
  idleTimer?: NodeJS.Timeout;
}

export interface PubSubOptions {
  /** How long an unused channel stays subscribed (default 30 s). */
  idleMs?: number;
}

export class PubSub {
  private readonly channels = new Map<string, Channel>();
  private readonly reconnectListeners = new Set<() => void>();
  private readonly idleMs: number;
  private connectedOnce = false;

  constructor(
    readonly subscriber: RedisClient,
    opts: PubSubOptions = {},
  ) {
    this.idleMs = opts.idleMs ?? 30_000;
    subscriber.on('smessage', (channel: string, message: string) => {
      const c = this.channels.get(channel);
      if (c) for (const h of c.handlers) h(message);
    });
    // Messages published while the connection was down are lost: tell whoever caches state.
    subscriber.on('ready', () => {
      if (this.connectedOnce) this.missedSome();
      this.connectedOnce = true;
    });
    // On a Redis Cluster, a shard's subscriber replaced (its node failed, slots moved): the
    // client subscribes its channels again, and what was published in between is lost.
    subscriber.on('subscribersReady', () => this.missedSome());
  }

  /**
   * Calls `handler` for every message on `channel` until the returned function is called.
   * Resolves once the subscription is active, so nothing published afterwards is missed.
   */
  async subscribe(channel: string, handler: Handler): Promise<() => void> {
    let c = this.channels.get(channel);
    if (!c) {
      const ready = this.subscriber.ssubscribe(channel).then(() => undefined);
      c = { handlers: new Set(), ready };
      this.channels.set(channel, c);
      ready.catch(() => {
        if (this.channels.get(channel) === c) this.channels.delete(channel);
      });
    }
    clearTimeout(c.idleTimer);
    c.handlers.add(handler);
    await c.ready;
    const entry = c;
    return () => {
      entry.handlers.delete(handler);
      if (entry.handlers.size > 0) return;
      entry.idleTimer = setTimeout(() => {
        if (entry.handlers.size > 0 || this.channels.get(channel) !== entry) return;
        this.channels.delete(channel);
        this.subscriber.sunsubscribe(channel).catch(() => {});
      }, this.idleMs);
      entry.idleTimer.unref();
    };
  }

  private missedSome(): void {
    for (const l of this.reconnectListeners) l();
  }

  /** Called after the subscriber reconnects (notices may have been missed meanwhile). */
  onReconnect(listener: () => void): () => void {
    this.reconnectListeners.add(listener);
    return () => this.reconnectListeners.delete(listener);
  }

  /** Number of channels currently subscribed (for tests and metrics). */
  get size(): number {
    return this.channels.size;
  }

  close(): void {
    for (const c of this.channels.values()) clearTimeout(c.idleTimer);
    this.channels.clear();
  }
}
