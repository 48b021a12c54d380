import { createRequire } from 'node:module';
import { pino, type DestinationStream, type Logger } from 'pino';
import type { PinoPretty as Pretty } from 'pino-pretty';
import { redactText, type Config } from './config/index.js';

export type { Logger };

const outputClosed = new Set<() => void>();

/**
 * Calls `fn` when the log output's reader went away (`seckill up | head`: EPIPE on stdout), so
 * a launcher can stop like on Ctrl-C instead of running on, unheard.
 */
export function onLogOutputClosed(fn: () => void): void {
  outputClosed.add(fn);
}

/** A log field with a URL's password in it (an error naming a connection string), masked. */
function redactDeep(value: unknown, depth: number): unknown {
  if (typeof value === 'string') return value.includes('://') ? redactText(value) : value;
  // plain objects only: an Error goes through its serializer below, and arrays of numbers are
  // what most fields hold
  if (
    depth === 0 ||
    typeof value !== 'object' ||
    value === null ||
    Object.getPrototypeOf(value) !== Object.prototype
  ) {
    return value;
  }
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>))
    out[k] = redactDeep(v, depth - 1);
  return out;
}

/** pino's error serializer (a fresh object), with URL passwords masked in what it says. */
function redactError(err: unknown) {
  // most callers log `err: messageOf(err)`, a string
  if (!(err instanceof Error)) return redactDeep(err, 2);
  const out = pino.stdSerializers.err(err);
  out.message = redactDeep(out.message, 0) as string;
  out.stack = redactDeep(out.stack, 0) as string;
  return out;
}

/**
 * The process logger on stdout, level from config, one format per stream: readable lines when
 * stdout is a terminal (a person reads it), JSON lines otherwise (a log collector reads it).
 */
export function createLogger(
  config: Pick<Config, 'log'>,
  name = 'seckill',
  terminal = process.stdout.isTTY === true,
): Logger {
  let out: DestinationStream;
  if (terminal) {
    // loaded only for a terminal: every CLI start would pay for it (~80 ms) otherwise
    const { PinoPretty } = createRequire(import.meta.url)('pino-pretty') as {
      PinoPretty: typeof Pretty;
    };
    out = PinoPretty({ destination: 1, sync: true, colorize: true, ignore: 'hostname' });
  } else {
    const json = pino.destination({ dest: 1, sync: true });
    json.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EPIPE') for (const fn of outputClosed) fn();
    });
    out = json;
  }
  return pino(
    {
      name,
      level: config.log.level,
      base: { pid: process.pid },
      formatters: { log: (fields) => redactDeep(fields, 3) as Record<string, unknown> },
      serializers: { err: redactError },
      hooks: {
        logMethod(args, method) {
          method.apply(
            this,
            args.map((a) => (typeof a === 'string' ? redactDeep(a, 0) : a)) as typeof args,
          );
        },
      },
    },
    out,
  );
}
