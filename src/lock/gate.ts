/**
 * An in-process FIFO gate per lock name: requests of one process for the same distributed lock
 * line up here first, so only one of them at a time talks to Redis. Waiting costs no Redis
 * command, a timeout costs none either, and the hand-off between two local requests is a
 * resolved promise instead of an unlock notice. Cross-process exclusion is still the
 * distributed lock's job.
 */

interface Line {
  busy: boolean;
  waiters: Array<{ admit: () => void; timer: NodeJS.Timeout | undefined }>;
}

export class LocalGate {
  private readonly lines = new Map<string, Line>();

  /**
   * Waits for the gate of `name`, at most `waitMs`.
   * @returns a function that opens the gate for the next waiter (call it exactly once), or null
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
      waiter.timer = setTimeout(() => {
        const i = l.waiters.indexOf(waiter);
        if (i >= 0) l.waiters.splice(i, 1);
        resolve(null);
      }, waitMs);
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

  /** Locks with someone inside or waiting (tests, metrics). */
  get size(): number {
    return this.lines.size;
  }
}
