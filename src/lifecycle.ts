/**
 * Ordered shutdown: components are added as they start and closed in reverse order, each
 * awaited, errors logged and not allowed to stop the rest.
 */
import { messageOf } from './errors.js';
import { onLogOutputClosed, type Logger } from './log.js';

/** Longest one component may take to close before shutdown moves on to the next. */
const STEP_TIMEOUT_MS = 3_000;

export class Lifecycle {
  private readonly closers: Array<{
    name: string;
    close: () => Promise<void> | void;
    timeoutMs: number;
    kill?: (() => unknown) | undefined;
  }> = [];
  private readonly killers: Array<() => unknown> = [];
  private readonly inFlight = new Set<Promise<unknown>>();
  private closing: Promise<void> | undefined;

  constructor(private readonly logger: Logger) {}

  /**
   * Registers `close` to run at shutdown, before everything registered earlier.
   * @param kill - synchronous last resort for a forced exit (SIGKILL a child server), so even a
   *   hung shutdown leaves no process of ours behind; it may return the child's exit.
   * @param timeoutMs - how long this step may take (default STEP_TIMEOUT_MS)
   */
  add(
    name: string,
    close: () => Promise<void> | void,
    kill?: () => unknown,
    timeoutMs = STEP_TIMEOUT_MS,
  ): void {
    this.closers.push({ name, close, timeoutMs, kill });
    if (kill) this.killers.push(kill);
  }

  /**
   * Start-up work in flight (starting PostgreSQL): a shutdown that begins meanwhile (Ctrl-C, a
   * closed output pipe) waits for it to settle and then closes what it added, so a server that
   * was still starting is not left running after we exit.
   */
  async starting<T>(work: Promise<T>): Promise<T> {
    this.inFlight.add(work);
    try {
      return await work;
    } finally {
      this.inFlight.delete(work);
    }
  }

  /**
   * Forced exit: kill what can be killed synchronously, newest first. Settles when the killed
   * children are gone, so a caller that can wait exits with none of them left as a zombie.
   */
  killAll(): Promise<void> {
    const gone: unknown[] = [];
    for (const kill of [...this.killers].reverse()) {
      try {
        gone.push(kill());
      } catch {
        // already gone
      }
    }
    return Promise.allSettled(gone).then(() => undefined);
  }

  /** True once shutdown has begun: background start-up work should give up. */
  get isClosing(): boolean {
    return this.closing !== undefined;
  }

  /**
   * Closes everything, but gives up after `timeoutMs`: then what can be killed is killed (the
   * child servers), so nothing of ours is left running.
   * @returns true when everything closed in time.
   */
  async closeWithin(timeoutMs: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), timeoutMs);
      timer.unref();
    });
    const closed = await Promise.race([this.close().then(() => true as const), timedOut]);
    clearTimeout(timer);
    if (!closed) {
      this.logger.error({ timeoutMs }, 'shutdown did not finish in time: killing what is left');
      await reap(() => this.killAll());
    }
    return closed;
  }

  /**
   * Closes everything, newest first. Each step gets at most STEP_TIMEOUT_MS: a step that hangs
   * (a queue waiting on a Redis that is gone) is left behind, so the steps after it (stopping
   * PostgreSQL cleanly) still run.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      // what start-up work adds while we close is closed too, once that work has settled
      for (;;) {
        await this.closeAdded();
        if (this.inFlight.size === 0) break;
        await Promise.allSettled([...this.inFlight]);
      }
    })();
    return this.closing;
  }

  /** Closes what is registered, newest first; each step bounded by its own timeout. */
  private async closeAdded(): Promise<void> {
    for (let step = this.closers.pop(); step; step = this.closers.pop()) {
      const { name, close, timeoutMs, kill } = step;
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), timeoutMs);
        timer.unref();
      });
      try {
        const outcome = await Promise.race([Promise.resolve().then(close), timedOut]);
        if (outcome === 'timeout') {
          this.logger.warn({ component: name, timeoutMs }, 'close timed out');
          // a child server still stopping would outlive us: killed, and reaped before going on
          if (kill) await reap(kill);
        } else this.logger.debug({ component: name }, 'closed');
      } catch (err) {
        this.logger.warn({ component: name, err: messageOf(err) }, 'close failed');
      } finally {
        clearTimeout(timer);
      }
    }
  }
}

/** How long a forced close waits for its SIGKILLed children to be reaped. */
const KILL_REAP_MS = 2_000;

/** Runs `kill` and waits (bounded) for what it returns: a SIGKILLed child's exit, reaped. */
async function reap(kill: () => unknown): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, KILL_REAP_MS)));
  try {
    await Promise.race([Promise.resolve().then(kill), bound]);
  } catch {
    // already gone
  } finally {
    clearTimeout(timer);
  }
}

/** A terminal's Ctrl-C often arrives twice (once direct, once forwarded by npm): not a "force". */
const REPEAT_GRACE_MS = 2_000;

/**
 * Closes `lifecycle` on SIGINT/SIGTERM, then exits 0. An `unref()`'d timer forces exit 1 if
 * shutdown hangs; a signal repeated after a grace period forces it too. A forced exit first
 * kills the child servers, so nothing of ours is left running. An uncaught error (or unhandled
 * rejection) closes it the same way and exits 1: a crash must not orphan the child servers
 * either (`up`'s Redis and PostgreSQL were left running after one).
 */
export function closeOnSignals(lifecycle: Lifecycle, logger: Logger, timeoutMs: number): void {
  let firstAt = 0;
  const force = (why: string) => {
    logger.error(why);
    lifecycle.killAll();
    process.exit(1);
  };
  const shutDown = (exitCode: number) => {
    firstAt = Date.now();
    setTimeout(() => force(`shutdown took over ${timeoutMs} ms: forcing exit`), timeoutMs).unref();
    void lifecycle.close().then(() => {
      logger.info('stopped');
      process.exit(exitCode);
    });
  };
  const onSignal = (signal: NodeJS.Signals) => {
    if (firstAt) {
      if (Date.now() - firstAt > REPEAT_GRACE_MS) force(`${signal} again: forcing exit`);
      return;
    }
    logger.info({ signal }, 'shutting down');
    shutDown(0);
  };
  process.on('uncaughtException', (err, origin) => {
    logger.fatal({ err, origin }, 'uncaught error: shutting down');
    if (!firstAt) shutDown(1);
  });
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  // a closed terminal, and a closed output pipe (`up | head`), end it like Ctrl-C: nothing of
  // ours may be orphaned
  process.on('SIGHUP', onSignal);
  const onOutputError = (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') onSignal('SIGPIPE');
  };
  process.stdout.on('error', onOutputError);
  process.stderr.on('error', onOutputError);
  onLogOutputClosed(() => onSignal('SIGPIPE'));
}
