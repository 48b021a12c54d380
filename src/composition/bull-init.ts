import type { Worker } from 'bullmq';
import { messageOf } from '../errors.js';
import { storeFull } from '../outages.js';
import type { Core } from './core.js';

/** What a BullMQ Queue and Worker share: the promise of their connection's first initialisation. */
export interface BullClient {
  waitUntilReady(): Promise<unknown>;
}

/**
 * BullMQ keeps its connection's first initialisation: a Queue or Worker whose init failed (a
 * Redis Cluster master paused or cut off at that moment, its INFO sent there) answers every later
 * call with "Connection is closed." for as long as the process lives, though Redis is back (a
 * fresh process connects at once). So a failed init is the process's end:
 * `onDead` is called, unless shutdown has begun.
 */
export function watchBullInit(
  client: BullClient,
  name: string,
  onDead: (name: string, err: unknown) => void,
  isClosing: () => boolean,
): void {
  client.waitUntilReady().catch((err: unknown) => {
    if (!isClosing()) onDead(name, err);
  });
}

/** `watchBullInit` for a process: log, stop what it runs (bounded), exit 1 for the supervisor. */
export function exitWhenBullInitFails(core: Pick<Core, 'lifecycle' | 'logger' | 'config'>) {
  return (client: BullClient, name: string) =>
    watchBullInit(
      client,
      name,
      (what, err) => {
        core.logger.fatal(
          { client: what, err: messageOf(err) },
          `BullMQ's ${what} could not connect (a Redis node did not answer then) and BullMQ never ` +
            'tries again: exiting, so the supervisor starts a fresh process',
        );
        void core.lifecycle
          .closeWithin(core.config.http.shutdownTimeoutMs)
          .then(() => process.exit(1));
      },
      () => core.lifecycle.isClosing,
    );
}

/** How long a worker whose Redis refused it for memory waits before it asks again. */
export const FULL_STORE_PAUSE_MS = 1_000;

/**
 * A BullMQ worker whose Redis is past its maxmemory fails every job fetch at once, and BullMQ
 * waits between tries only after a connection error: the upkeep worker asked ~860 times a second
 * (measured), every time a script Redis refused. On such an error the worker pauses (its jobs
 * under way go on) and resumes after `pauseMs`, unless it is closing
 * (docs/catalogue.md#redis-memory).
 */
export function pauseWhileStoreFull(worker: Worker, pauseMs = FULL_STORE_PAUSE_MS): void {
  let timer: NodeJS.Timeout | undefined;
  worker.on('error', (err) => {
    if (timer || !storeFull(err) || worker.closing) return;
    void worker.pause(true).catch(() => undefined);
    timer = setTimeout(() => {
      timer = undefined;
      if (!worker.closing) void worker.resume();
    }, pauseMs);
  });
  worker.on('closing', () => clearTimeout(timer));
}
