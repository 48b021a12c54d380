/**
 * Signalling processes a test started, tolerant of processes that have already exited: a
 * PostgreSQL backend can end between being listed and being signalled (ESRCH), which is not a
 * failure of the product. Any other error (EPERM: not ours) still throws.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** Sends `sig`; false when the process was already gone. */
export function signal(pid: number, sig: NodeJS.Signals | 0): boolean {
  try {
    process.kill(pid, sig);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw err;
  }
}

/** Direct children of `parent`, read from /proc (a listing: any of them may exit right after). */
export function childrenOf(parent: number): number[] {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      try {
        const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === parent;
      } catch {
        return false; // exited while listed
      }
    })
    .map(Number);
}

/** `parent` and its direct children: the ones still there when signalled. */
export function signalWithChildren(parent: number, sig: NodeJS.Signals): number[] {
  return [parent, ...childrenOf(parent)].filter((pid) => signal(pid, sig));
}

export const isAlive = (pid: number): boolean => signal(pid, 0);
