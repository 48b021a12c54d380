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
  /**
   * How long a subscription waits for Redis's reply before it fails (default 2 s, the command
   * timeout's default). The subscriber has no command timeout: a reply that never comes would
   * hold every caller of the channel for good.
   */
  subscribeTimeoutMs?: number;
}

export class PubSub {
  private readonly channels = new Map<string, Channel>();
  private readonly reconnectListeners = new Set<() => void>();
  private readonly idleMs: number;
  private readonly subscribeTimeoutMs: number;
  private connectedOnce = false;

  constructor(
    readonly subscriber: RedisClient,
    opts: PubSubOptions = {},
  ) {
    this.idleMs = opts.idleMs ?? 30_000;
    this.subscribeTimeoutMs = opts.subscribeTimeoutMs ?? 2_000;
    subscriber.on('smessage', (channel: string, message: string) => {
      const c = this.channels.get(channel);
      if (c) for (const h of c.handlers) h(message);
    });
    // Messages published while the connection was down are lost: tell whoever caches state.
    subscriber.on('ready', () => {
      if (this.connectedOnce) {
        this.resubscribe();
        this.missedSome();
      }
      this.connectedOnce = true;
    });
    // On a Redis Cluster, a shard's subscriber replaced (its node failed, slots moved): the
    // client subscribes its channels again, and what was published in between is lost.
    subscriber.on('subscribersReady', () => this.missedSome());
  }

  /**
   * Calls `handler` for every message on `channel` until the returned function is called.
   * Resolves once the subscription is active, so nothing published afterwards is missed.
   * Rejects when Redis does not confirm it (the connection closed, or no reply within
   * subscribeTimeoutMs): the channel is forgotten, so the next call asks again.
   */
  async subscribe(channel: string, handler: Handler): Promise<() => void> {
    let c = this.channels.get(channel);
    if (!c) {
      const ready = this.confirmed(channel);
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

  /**
   * The SSUBSCRIBE, bounded: a reply lost with its connection is failed there (redis/connection.ts,
   * single Redis), and the timeout ends every other wait (a cluster's sharded subscriber too). A
   * confirmation that comes after the timeout subscribes a channel nobody listens to: its
   * messages are dropped, and the next subscription asks again.
   */
  private confirmed(channel: string): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const ms = this.subscribeTimeoutMs;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`no reply to the subscription of "${channel}" within ${ms} ms`)),
        ms,
      );
    });
    return Promise.race([this.subscriber.ssubscribe(channel), late]).then(
      () => clearTimeout(timer),
      (err: unknown) => {
        clearTimeout(timer);
        throw err;
      },
    );
  }

  /**
   * Every channel held, asked for again on a new connection. ioredis re-subscribes by itself, but
   * its call is awaited by nobody: lost in a second reset (its reply, or the connection, gone
   * before it was confirmed), the channel was never asked for again and stayed unheard for good
   * while this process held it. SSUBSCRIBE of a channel held is a no-op in Redis; one lost here is
   * asked again at the next reconnect.
   */
  private resubscribe(): void {
    for (const channel of this.channels.keys()) {
      this.subscriber.ssubscribe(channel).catch(() => {});
    }
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
