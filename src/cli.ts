#!/usr/bin/env node
/**
 * One entry: `seckill up | serve | worker | migrate | seed | reconcile`. It reads the command
 * line; the composition root (src/composition) builds what each command needs.
 */
import { parseArgs } from 'node:util';
import { migrate, reconcile, seed, serve, worker } from './cli/commands.js';
import { ExitError } from './cli/output.js';
import { up } from './cli/up.js';
import { ConfigError } from './config/index.js';
import { MigrationError } from './db/migrate.js';
import { messageOf } from './errors.js';
import { MissingBinaryError } from './launcher/binaries.js';
import { LaunchError } from './launcher/process.js';

const USAGE = `Usage: seckill <command>

Commands:
  up        start local redis-server + PostgreSQL (unless REDIS_URL / DATABASE_URL are set),
            migrate, seed a demo sale, then serve the API and the order workers;
            Ctrl-C stops everything it started
  serve     serve the API against REDIS_URL / DATABASE_URL
  worker    run order workers (and the outbox sweeper) against REDIS_URL / DATABASE_URL
  reconcile <product>
            check that no unit was lost or sold twice; prints a report, exits 1 on a mismatch
  migrate   apply pending migrations and exit
  seed <product> --total N [--strategy segmented|global|lockfree] [--segments N]
            [--limit-per-user N] [--pay-within SECONDS] [--require-sale-token]
            [--starts-at ISO] [--ends-at ISO] [--force]
            seed (or reseed) a product's stock over its segments

Configuration comes from environment variables; see README.md#configuration.`;

async function main(argv: string[]): Promise<void> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: false,
    options: { help: { type: 'boolean', short: 'h' } },
  });
  const [command] = positionals;
  if (values.help || !command) {
    process.stdout.write(`${USAGE}\n`);
    if (!command && !values.help) process.exitCode = 2;
    return;
  }
  switch (command) {
    case 'up':
      return up();
    case 'serve':
      return serve();
    case 'seed':
      return seed(argv, USAGE);
    case 'worker':
      return worker();
    case 'reconcile':
      return reconcile(positionals, USAGE);
    case 'migrate':
      return migrate();
    default:
      throw new ExitError(`unknown command "${command}"\n\n${USAGE}`, 2);
  }
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
