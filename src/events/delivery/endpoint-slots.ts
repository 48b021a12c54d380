/**
 * A worker process's WEBHOOK_CONCURRENCY delivery slots, shared among the endpoints so that one
 * receiver that never answers cannot hold them all (docs/events.md#isolation):
 *
 * - each endpoint has a limit of its own, additive increase, multiplicative decrease: one more
 *   slot for each answer it gives (any HTTP status: it answers), half as many after each
 *   attempt that got none (a timeout, a connection refused or cut), never below one; it starts
 *   at a quarter of the slots (a receiver that hangs from its first request takes no more);
 * - a freed slot goes to the endpoints waiting in turn (round robin), so endpoints with work share
 *   the slots evenly;
 * - an attempt with no answer after `stallMs` stops counting against the process's slots (it still
 *   counts against its endpoint's limit): a hanging request costs an idle socket, not a slot;
 * - an endpoint is **quiet** while its last attempt got no answer, or while it has an attempt
 *   stalled and has answered nothing for `stallMs`. A quiet endpoint starts one attempt at a time,
 *   and a lane that finds it busy is **held back**: not waiting here (its job ends), not an
 *   attempt (its count is unchanged), due again after the hold (holdDelay: the schedule's step
 *   for how long the endpoint has been quiet).
 *
 * All of it is this process's view: each worker process keeps its own.
 */

/** What a lane got: a slot, or held back for `holdMs` (its endpoint is quiet and busy). */
export type Admission = { held: false; slot: Slot } | { held: true; holdMs: number };

/** A lane's hold on a slot, for as long as it sends its events. */
export interface Slot {
  /** a request starts (the stall clock restarts) */
  attempt(): void;
  /** the request ended: `answered` when the receiver sent any HTTP status */
  ended(answered: boolean): void;
  release(): void;
}

export interface EndpointSlotsOptions {
  /** slots of the process (WEBHOOK_CONCURRENCY) */
  size: number;
  /** an attempt without an answer this long stops counting against the process's slots */
  stallMs: number;
  /** an endpoint's limit before it answered anything here (a quarter of `size` by default) */
  startLimit?: number;
  /** how long a lane is held back, for how long its endpoint has been quiet */
  holdMs(quietForMs: number): number;
  now?: () => number;
}

interface Hold extends Slot {
  startedAt: number;
  stalled: boolean;
  timer: NodeJS.Timeout | undefined;
}

interface Share {
  id: string;
  limit: number;
  holds: Set<Hold>;
  stalled: number;
  waiting: Array<(admission: Admission) => void>;
  /** when its attempts began to get no answer (undefined: its last one was answered) */
  silentSince: number | undefined;
  lastAnswerAt: number;
}

/** The stall clock of a process: long enough for a slow answer, short beside the timeout. */
export const stallMsFor = (timeoutMs: number) => Math.min(1_000, Math.max(100, timeoutMs / 4));

export class EndpointSlots {
  private readonly shares = new Map<string, Share>();
  /** attempts in flight that count against the process's slots (not stalled) */
  private counted = 0;
  private turn = 0;
  private readonly now: () => number;

  constructor(private readonly opts: EndpointSlotsOptions) {
    this.now = opts.now ?? Date.now;
  }

  /** Resolves once a slot is the lane's, or at once when the lane is held back. */
  enter(endpointId: string): Promise<Admission> {
    const share = this.shareOf(endpointId);
    if (this.counted < this.opts.size && this.mayStart(share)) {
      return Promise.resolve({ held: false, slot: this.start(share) });
    }
    if (this.quiet(share)) return Promise.resolve(this.heldBack(share));
    return new Promise((resolve) => share.waiting.push(resolve));
  }

  /** An endpoint's limit now (its share of the slots at most), for the metrics. */
  limits(): Map<string, number> {
    return new Map([...this.shares].map(([id, share]) => [id, share.limit]));
  }

  private shareOf(endpointId: string): Share {
    let share = this.shares.get(endpointId);
    if (!share) {
      share = {
        id: endpointId,
        limit: this.opts.startLimit ?? Math.max(1, Math.ceil(this.opts.size / 4)),
        holds: new Set(),
        stalled: 0,
        waiting: [],
        silentSince: undefined,
        lastAnswerAt: -Infinity,
      };
      this.shares.set(endpointId, share);
    }
    return share;
  }

  private quiet(share: Share): boolean {
    return (
      share.silentSince !== undefined ||
      (share.stalled > 0 && this.now() - share.lastAnswerAt > this.opts.stallMs)
    );
  }

  private mayStart(share: Share): boolean {
    return share.holds.size < share.limit && (share.holds.size === 0 || !this.quiet(share));
  }

  private heldBack(share: Share): Admission {
    let since = share.silentSince ?? this.now();
    for (const hold of share.holds) if (hold.stalled) since = Math.min(since, hold.startedAt);
    return { held: true, holdMs: this.opts.holdMs(this.now() - since) };
  }

  private start(share: Share): Hold {
    this.counted++;
    const hold: Hold = {
      startedAt: this.now(),
      stalled: false,
      timer: undefined,
      attempt: () => {
        this.unstall(share, hold);
        hold.startedAt = this.now();
        clearTimeout(hold.timer);
        hold.timer = setTimeout(() => this.stall(share, hold), this.opts.stallMs);
        hold.timer.unref();
      },
      ended: (answered) => {
        clearTimeout(hold.timer);
        this.unstall(share, hold);
        if (answered) {
          share.lastAnswerAt = this.now();
          share.silentSince = undefined;
          share.limit = Math.min(this.opts.size, share.limit + 1);
        } else {
          share.silentSince ??= hold.startedAt;
          share.limit = Math.max(1, Math.floor(share.limit / 2));
        }
        this.grant();
      },
      release: () => {
        if (!share.holds.delete(hold)) return;
        clearTimeout(hold.timer);
        if (hold.stalled) share.stalled--;
        else this.counted--;
        if (share.holds.size === 0 && share.waiting.length === 0 && !this.quiet(share)) {
          // nothing of it here and answering at full width: its entry need not be kept
          if (share.limit === this.opts.size) this.shares.delete(share.id);
        }
        this.grant();
      },
    };
    share.holds.add(hold);
    return hold;
  }

  private stall(share: Share, hold: Hold): void {
    if (hold.stalled || !share.holds.has(hold)) return;
    hold.stalled = true;
    share.stalled++;
    this.counted--;
    this.grant();
    // answered a moment ago: quiet once that answer is `stallMs` old, unless one comes meanwhile
    if (!this.quiet(share)) {
      const wait = share.lastAnswerAt + this.opts.stallMs - this.now() + 1;
      setTimeout(() => this.grant(), Math.max(1, wait)).unref();
    }
  }

  private unstall(share: Share, hold: Hold): void {
    if (!hold.stalled) return;
    hold.stalled = false;
    share.stalled--;
    this.counted++;
  }

  /**
   * Holds back the lanes waiting for a quiet endpoint that may start nothing, then hands the free
   * slots to the endpoints waiting, one each in turn.
   */
  private grant(): void {
    for (const share of this.shares.values()) {
      if (share.waiting.length > 0 && !this.mayStart(share) && this.quiet(share)) {
        for (const resolve of share.waiting.splice(0)) resolve(this.heldBack(share));
      }
    }
    for (let progress = true; progress && this.counted < this.opts.size;) {
      progress = false;
      const ready = [...this.shares.values()].filter(
        (share) => share.waiting.length > 0 && this.mayStart(share),
      );
      for (let i = 0; i < ready.length && this.counted < this.opts.size; i++) {
        const share = ready[(this.turn + i) % ready.length]!;
        if (share.waiting.length === 0 || !this.mayStart(share)) continue;
        share.waiting.shift()!({ held: false, slot: this.start(share) });
        progress = true;
      }
      this.turn++;
    }
  }
}
