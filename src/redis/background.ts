/**
 * Work a process does on its own schedule, not for a request (the waiting rooms' admitter loop):
 * its Redis commands are marked by running it here, so that what measures a request's cost in
 * commands (command-count.ts) leaves them out by one rule, whichever connection they share.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

const loop = new AsyncLocalStorage<string>();

/** Runs `fn` (and everything it starts: promises, timers) as the background loop `name`. */
export function inBackground<T>(name: string, fn: () => T): T {
  return loop.run(name, fn);
}

/** The background loop the current code runs for; undefined in a request's work. */
export function backgroundLoop(): string | undefined {
  return loop.getStore();
}
