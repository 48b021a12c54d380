#!/usr/bin/env node
/**
 * One entry: `seckill up | serve | worker | migrate | seed | reconcile`. It reads the command
 * line (node's parseArgs, strict: an unknown flag is a usage error, not a stack trace); the
 * composition root (src/composition) builds what each command needs.
 *
 * Exit codes: 0 done; 1 it failed (a reconcile mismatch, a server that would not start, a
 * migration, a refused seed); 2 a usage or configuration error.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { migrate, reconcile, seed, SEED_OPTIONS, serve, worker } from './cli/commands.js';
import { ExitError } from './cli/output.js';
import { up } from './cli/up.js';
import { ConfigError } from './config/index.js';
import { MigrationError } from './db/migrate.js';
import { messageOf } from './errors.js';
import { MissingBinaryError } from './launcher/binaries.js';
import { LaunchError } from './launcher/process.js';

interface Command {
  /** its usage line(s) and what it does */
  usage: string;
  /** names of the positional arguments it takes */
  args: string[];
  options?: ParseArgsConfig['options'];
  run(args: string[], values: Record<string, unknown>): Promise<void>;
}

const COMMANDS: Record<string, Command> = {
  up: {
    usage: `up
            start local redis-server + PostgreSQL (unless REDIS_URL / DATABASE_URL are set),
            migrate, seed a demo sale, then serve the API and the order workers;
            Ctrl-C stops everything it started`,
    args: [],
    run: () => up(),
  },
  serve: {
    usage: `serve
            serve the API against REDIS_URL / DATABASE_URL`,
    args: [],
    run: () => serve(),
  },
  worker: {
    usage: `worker
            run order workers (and the sweepers) against REDIS_URL / DATABASE_URL;
            /healthz, /readyz and /metrics on WORKER_PORT`,
    args: [],
    run: () => worker(),
  },
  reconcile: {
    usage: `reconcile <product>
            check that no unit was lost or sold twice; prints a report, exits 1 on a mismatch`,
    args: ['product'],
    run: ([productId]) => reconcile(productId!),
  },
  migrate: {
    usage: `migrate
            apply pending migrations and exit`,
    args: [],
    run: () => migrate(),
  },
  seed: {
    usage: `seed <product> --total N [--strategy segmented|global|lockfree] [--segments N]
            [--limit-per-user N] [--pay-within SECONDS] [--require-sale-token]
            [--starts-at ISO] [--ends-at ISO] [--force]
            seed (or reseed: --force while it is live) a product's stock over its segments`,
    args: ['product'],
    options: SEED_OPTIONS,
    run: ([productId], values) => seed(productId!, values as Parameters<typeof seed>[1]),
  },
};

const USAGE = `Usage: seckill <command> [--help]

Commands:
${Object.values(COMMANDS)
  .map((c) => `  ${c.usage}`)
  .join('\n')}

Exit codes: 0 done, 1 failed, 2 usage or configuration error.
Configuration comes from environment variables; see README.md#configuration.`;

const usageOf = (name: string) =>
  `Usage: seckill ${COMMANDS[name]!.usage}\n\nConfiguration comes from environment variables; see README.md#configuration.`;

async function main(argv: string[]): Promise<void> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(`${USAGE}\n`);
    if (name === undefined) process.exitCode = 2;
    return;
  }
  const command = COMMANDS[name];
  if (!command) throw new ExitError(`unknown command "${name}"\n\n${USAGE}`, 2);
  let parsed: { values: Record<string, unknown>; positionals: string[] };
  try {
    parsed = parseArgs({
      args: rest,
      allowPositionals: true,
      strict: true,
      options: { help: { type: 'boolean', short: 'h' }, ...command.options },
    });
  } catch (err) {
    // ERR_PARSE_ARGS_*: an unknown option, a missing value; said in node's words
    const said = messageOf(err).split('. ')[0];
    throw new ExitError(`${name}: ${said}\n\n${usageOf(name)}`, 2);
  }
  if (parsed.values.help) {
    process.stdout.write(`${usageOf(name)}\n`);
    return;
  }
  if (parsed.positionals.length !== command.args.length) {
    const wanted = command.args.length
      ? `takes ${command.args.map((a) => `<${a}>`).join(' ')}`
      : 'takes no arguments';
    throw new ExitError(
      `${name} ${wanted} (got ${parsed.positionals.length ? parsed.positionals.join(' ') : 'none'})\n\n${usageOf(name)}`,
      2,
    );
  }
  return command.run(parsed.positionals, parsed.values);
}

main(process.argv.slice(2)).catch((err: unknown) => {
  if (err instanceof ConfigError) {
    process.stderr.write(`${err.message}\nSee README.md#configuration.\n`);
    process.exit(2);
  }
  if (err instanceof ExitError) {
    process.stderr.write(`seckill: ${err.message}\n`);
    process.exit(err.code);
  }
  if (
    err instanceof MissingBinaryError ||
    err instanceof MigrationError ||
    err instanceof LaunchError
  ) {
    process.stderr.write(`seckill: ${err.message}\n`);
    process.exit(1);
  }
  process.stderr.write(
    `seckill: ${err instanceof Error ? (err.stack ?? err.message) : messageOf(err)}\n`,
  );
  process.exit(1);
});
