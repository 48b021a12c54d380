import { pino, type Logger } from 'pino';
import type { Config } from './config/index.js';

export type { Logger };

/** The process logger: JSON lines on stdout, level from config. */
export function createLogger(config: Pick<Config, 'log'>, name = 'seckill'): Logger {
  return pino({ name, level: config.log.level, base: { pid: process.pid } });
}
