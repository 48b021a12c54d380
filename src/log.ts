import { pino, type Logger } from 'pino';
import type { Config } from './config/index.js';

export type { Logger };

const outputClosed = new Set<() => void>();

/**
 * Calls `fn` when the log output's reader went away (`seckill up | head`: EPIPE on stdout), so
 * a launcher can stop like on Ctrl-C instead of running on, unheard.
 */
export function onLogOutputClosed(fn: () => void): void {
  outputClosed.add(fn);
}

/** The process logger: JSON lines on stdout, level from config. */
export function createLogger(config: Pick<Config, 'log'>, name = 'seckill'): Logger {
  const out = pino.destination({ dest: 1, sync: true });
  out.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') for (const fn of outputClosed) fn();
  });
  return pino({ name, level: config.log.level, base: { pid: process.pid } }, out);
}
