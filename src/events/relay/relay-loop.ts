/**
 * The relay's clock in each worker process: a timer, not a BullMQ job scheduler, so that an idle
 * shop costs no Redis command (a repeatable job costs dozens each run: its bookkeeping, lock and
 * events) and a few PostgreSQL reads a second. While runs find work it runs every
 * EVENT_RELAY_INTERVAL_MS; while they find none the wait doubles up to RELAY_IDLE_MS, and the
 * first run that finds work brings it back. Several processes may run it: a run holds the
 * relay's row (FOR UPDATE SKIP LOCKED), the others find it taken and skip.
 */

/** The longest wait after runs that found nothing (an event after a quiet spell waits this). */
export const RELAY_IDLE_MS = 1_000;

export interface RelayLoop {
  /** stops the timer; resolves once a run under way has finished */
  close(): Promise<void>;
}

/** The wait after a run: the interval after work, doubled (to `idleMs`) after none. */
export function nextRelayWait(
  lastWaitMs: number,
  foundWork: boolean,
  intervalMs: number,
  idleMs: number,
): number {
  return foundWork ? intervalMs : Math.max(intervalMs, Math.min(lastWaitMs * 2, idleMs));
}

export function startRelayLoop(opts: {
  /** one relay run: what it handed on */
  run: () => Promise<{ events: number; lanes: number }>;
  intervalMs: number;
  idleMs?: number;
  onError: (err: unknown) => void;
}): RelayLoop {
  const idleMs = Math.max(opts.intervalMs, opts.idleMs ?? RELAY_IDLE_MS);
  let wait = opts.intervalMs;
  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  const tick = async () => {
    let found = false;
    try {
      const r = await opts.run();
      found = r.events > 0 || r.lanes > 0;
    } catch (err) {
      opts.onError(err);
    }
    wait = nextRelayWait(wait, found, opts.intervalMs, idleMs);
    if (!closed) timer = setTimeout(() => (running = tick()), wait);
  };
  timer = setTimeout(() => (running = tick()), 0);
  return {
    async close() {
      closed = true;
      clearTimeout(timer);
      await running;
    },
  };
}
