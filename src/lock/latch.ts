/**
 * The in-process latch of a lock client: one FIFO line per lock name. Contenders of one process
 * for the same distributed lock line up here first, so only one of them at a time talks to
 * Redis. Waiting costs no Redis command, a timeout costs none either, and the hand-off between
 * two local contenders is a resolved promise instead of an unlock notice. Cross-process
 * exclusion (and fairness: see the hand-off reservation in lua/includes/waitQueue.lua) is still
 * the distributed lock's job.
 */

/** setTimeout's ceiling. */
const MAX_TIMER_MS = 2_147_483_647;

interface Line {
  busy: boolean;
  waiters: Array<{ admit: () => void; timer: NodeJS.Timeout | undefined }>;
}

export class LocalLatch {
  private readonly lines = new Map<string, Line>();

  /**
   * Waits for the latch of `name`, at most `waitMs`.
   * @returns a function that opens the latch for the next waiter (call it exactly once), or null
   *   when the wait ran out.
   */
  enter(name: string, waitMs: number): Promise<(() => void) | null> | (() => void) {
    let line = this.lines.get(name);
    if (!line) {
      line = { busy: false, waiters: [] };
      this.lines.set(name, line);
    }
    const l = line;
    const leave = () => this.leave(name, l);
    if (!l.busy) {
      l.busy = true;
      return leave;
    }
    if (waitMs <= 0) return Promise.resolve(null);
    return new Promise((resolve) => {
      const waiter = {
        admit: () => {
          clearTimeout(waiter.timer);
          resolve(leave);
        },
        timer: undefined as NodeJS.Timeout | undefined,
      };
      // Beyond setTimeout's range (Infinity: wait for ever) there is no timer at all.
      if (waitMs < MAX_TIMER_MS) {
        waiter.timer = setTimeout(() => {
          const i = l.waiters.indexOf(waiter);
          if (i >= 0) l.waiters.splice(i, 1);
          resolve(null);
        }, waitMs);
      }
      l.waiters.push(waiter);
    });
  }

  private leave(name: string, line: Line): void {
    const next = line.waiters.shift();
    if (next) {
      next.admit();
      return;
    }
    line.busy = false;
    this.lines.delete(name);
  }

  /** Whether someone of this process holds the latch of `name` (or waits for it). */
  busy(name: string): boolean {
    return this.lines.has(name);
  }

  /** Locks with someone inside or waiting (tests, metrics). */
  get size(): number {
    return this.lines.size;
  }
}
