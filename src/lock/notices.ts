/**
 * Waiting for unlock notices without spinning. Every waiter is in its lock's line in Redis, and
 * a release names exactly one of them (the oldest live one). The notice (that waiter's owner id)
 * goes to the channel of the waiter's process for that lock only, so one release wakes one
 * waiter and disturbs no other process; a waiter in the releasing process is woken directly. A
 * notice for a waiter that is between two attempts is kept as a permit, so it does not sleep
 * through its turn.
 */
import type { PubSub } from '../redis/pubsub.js';

interface ChannelState {
  refs: number;
  waiters: Map<string, (woken: boolean) => void>;
  permits: Set<string>;
  subscribed: Promise<() => void>;
}

export interface NoticeListener {
  /**
   * Sleeps until a notice names `owner` or `ms` pass.
   * @returns true when woken by a notice, false on timeout.
   * @throws the signal's reason when `signal` aborts.
   */
  wait(owner: string, ms: number, signal?: AbortSignal): Promise<boolean>;
  release(): void;
}

export class UnlockNotices {
  private readonly channels = new Map<string, ChannelState>();

  constructor(
    private readonly pubsub: PubSub,
    private readonly processId: string,
  ) {}

  /**
   * Subscribes to this process's notice channel of a lock (once per lock per process) and returns
   * a handle to wait with.
   * @param channelPrefix - the lock's `channel` key (this process's id is appended).
   */
  async listen(channelPrefix: string): Promise<NoticeListener> {
    const channel = channelPrefix;
    let state = this.channels.get(channel);
    if (!state) {
      const created: ChannelState = {
        refs: 0,
        waiters: new Map(),
        permits: new Set(),
        subscribed: this.pubsub.subscribe(`${channelPrefix}${this.processId}`, (owner) =>
          this.wake(created, owner),
        ),
      };
      state = created;
      this.channels.set(channel, state);
    }
    state.refs++;
    const s = state;
    const release = () => {
      if (--s.refs > 0) return;
      if (this.channels.get(channel) === s) this.channels.delete(channel);
      void s.subscribed.then(
        (unsubscribe) => unsubscribe(),
        () => {},
      );
    };
    try {
      await s.subscribed;
    } catch (err) {
      release();
      throw err;
    }
    return { wait: (owner, ms, signal) => this.wait(s, owner, ms, signal), release };
  }

  /** This process's release (or give-up) named `owner`, one of our own waiters. */
  wakeLocal(channel: string, owner: string): void {
    const state = this.channels.get(channel);
    if (state) this.wake(state, owner);
  }

  private wake(state: ChannelState, owner: string): void {
    const waiter = state.waiters.get(owner);
    if (waiter) {
      state.waiters.delete(owner);
      waiter(true);
    } else {
      state.permits.add(owner);
    }
  }

  private wait(
    state: ChannelState,
    owner: string,
    ms: number,
    signal?: AbortSignal,
  ): Promise<boolean> {
    signal?.throwIfAborted();
    if (state.permits.delete(owner)) return Promise.resolve(true);
    return new Promise<boolean>((resolve, reject) => {
      const onAbort = () => {
        clearTimeout(timer);
        state.waiters.delete(owner);
        reject(signal!.reason);
      };
      const done = (woken: boolean) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        resolve(woken);
      };
      const timer = setTimeout(
        () => {
          state.waiters.delete(owner);
          done(false);
        },
        Math.max(0, ms),
      );
      signal?.addEventListener('abort', onAbort, { once: true });
      state.waiters.set(owner, done);
    });
  }
}
