/**
 * Waiting for unlock notices without spinning. Every waiter is in its lock's line in Redis, and
 * a release names exactly one of them (the oldest live one). The notice (that waiter's owner id)
 * goes to the channel of the waiter's process for that lock only, so one release wakes one
 * waiter and disturbs no other process; a waiter in the releasing process is woken directly. A
 * notice for a waiter that is between two attempts is kept as a permit, so it does not sleep
 * through its turn.
 *
 * A channel stays subscribed for a while after its last waiter (a hot lock's waiters do not pay
 * SSUBSCRIBE/SUNSUBSCRIBE every time), so a waiter usually finds it listening already and needs no
 * extra attempt to cover the moment before its subscription.
 */
import type { PubSub } from '../redis/pubsub.js';

interface ChannelState {
  refs: number;
  /** true once SSUBSCRIBE answered: from then on no notice to this process is missed */
  active: boolean;
  waiters: Map<string, (woken: boolean) => void>;
  permits: Set<string>;
  subscribed: Promise<() => void>;
  /** Armed once per idle spell, not per waiter: a hot lock's waiters come and go all the time. */
  idleTimer: NodeJS.Timeout | undefined;
  /** When the last listener went (refs fell to 0). */
  idleSince: number;
}

export interface NoticeListener {
  /**
   * Sleeps until a notice names `owner` or `ms` pass.
   * @returns true when woken by a notice, false on timeout.
   * @throws the signal's reason when `signal` aborts.
   */
  wait(owner: string, ms: number, signal?: AbortSignal): Promise<boolean>;
  /** Done waiting as `owner`: drops its leftover permit, and the listener itself. */
  release(owner: string): void;
}

/** How long a channel nobody waits on stays subscribed. */
const IDLE_MS = 30_000;

export class UnlockNotices {
  private readonly channels = new Map<string, ChannelState>();

  constructor(
    private readonly pubsub: PubSub,
    private readonly processId: string,
  ) {}

  /**
   * A listener on a lock's channel that is subscribed already, or undefined (no round trip).
   * Taken before the first attempt, it catches a notice sent right after that attempt.
   * @param channelPrefix - the lock's `channel` key (this process's id is appended).
   */
  listening(channelPrefix: string): NoticeListener | undefined {
    const state = this.channels.get(channelPrefix);
    if (!state?.active) return undefined;
    return this.retain(channelPrefix, state);
  }

  /** Subscribes to this process's notice channel of a lock (if need be) and returns a listener. */
  async listen(channelPrefix: string): Promise<NoticeListener> {
    let state = this.channels.get(channelPrefix);
    if (!state) {
      const created: ChannelState = {
        refs: 0,
        active: false,
        waiters: new Map(),
        permits: new Set(),
        idleTimer: undefined,
        idleSince: 0,
        subscribed: this.pubsub.subscribe(`${channelPrefix}${this.processId}`, (owner) =>
          this.wake(created, owner),
        ),
      };
      created.subscribed.then(
        () => (created.active = true),
        () => {
          if (this.channels.get(channelPrefix) === created) this.channels.delete(channelPrefix);
        },
      );
      state = created;
      this.channels.set(channelPrefix, state);
    }
    const listener = this.retain(channelPrefix, state);
    try {
      await state.subscribed;
    } catch (err) {
      listener.release('');
      throw err;
    }
    return listener;
  }

  private retain(channel: string, state: ChannelState): NoticeListener {
    state.refs++;
    let released = false;
    return {
      wait: (owner, ms, signal) => this.wait(state, owner, ms, signal),
      release: (owner) => {
        if (released) return;
        released = true;
        state.permits.delete(owner);
        if (--state.refs > 0) return;
        state.idleSince = Date.now();
        if (!state.idleTimer) this.armIdle(channel, state, IDLE_MS);
      },
    };
  }

  /** Unsubscribes a channel once nobody has listened to it for IDLE_MS. */
  private armIdle(channel: string, state: ChannelState, ms: number): void {
    state.idleTimer = setTimeout(() => {
      state.idleTimer = undefined;
      // in use again: its next last listener arms the timer anew
      if (state.refs > 0 || this.channels.get(channel) !== state) return;
      const left = state.idleSince + IDLE_MS - Date.now();
      if (left > 0) {
        this.armIdle(channel, state, left);
        return;
      }
      this.channels.delete(channel);
      void state.subscribed.then(
        (unsubscribe) => unsubscribe(),
        () => {},
      );
    }, ms);
    state.idleTimer.unref();
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
    } else if (state.refs > 0) {
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

  /** Stops the idle timers (shutdown). */
  close(): void {
    for (const s of this.channels.values()) {
      clearTimeout(s.idleTimer);
      s.idleTimer = undefined;
    }
  }
}
