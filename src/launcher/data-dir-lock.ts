/**
 * One `seckill up` per data folder: a second one would stop the first one's PostgreSQL (it
 * clears a server it takes for left behind). `up` holds `DATA_DIR/up.lock` (its pid) while it
 * runs; another `up` on that folder refuses at once and leaves the first alone. A lock whose
 * process is gone (a launcher killed -9) is taken over.
 */
import { closeSync, mkdirSync, openSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { commandLine, isAlive, LaunchError, pidFromFile } from './process.js';

/** A launcher's pid, not one the kernel has since given to an unrelated process. */
function isLauncher(pid: number): boolean {
  if (!isAlive(pid)) return false;
  const command = commandLine(pid);
  return command === '' || /cli\.[jt]s/.test(command); // no /proc here: trust the pid
}

/**
 * Takes the data folder's lock.
 * @returns its release (removes the lock file if it is still ours)
 * @throws LaunchError naming the pid that holds it
 */
export function lockDataDir(dataDir: string): () => void {
  mkdirSync(dataDir, { recursive: true });
  const file = join(dataDir, 'up.lock');
  for (let attempt = 0; ; attempt++) {
    try {
      const fd = openSync(file, 'wx');
      writeSync(fd, `${process.pid}\n`);
      closeSync(fd);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) throw err;
      const holder = pidFromFile(file);
      if (holder !== undefined && holder !== process.pid && isLauncher(holder)) {
        throw new LaunchError(
          `DATA_DIR ${dataDir} is in use by another seckill up (pid ${holder}): ` +
            'stop that one first (Ctrl-C), or set another DATA_DIR',
        );
      }
      unlinkSync(file); // left by a launcher that is gone
    }
  }
  return () => {
    try {
      if (pidFromFile(file) === process.pid) unlinkSync(file);
    } catch {
      // already gone
    }
  };
}
