#!/usr/bin/env node
/**
 * One entry: `seckill up | serve | migrate`. The composition root: it reads the environment
 * through the config module and wires the parts each command needs.
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig, type Config } from './config/index.js';
import { MigrationError, migrateToLatest } from './db/migrate.js';
import { messageOf } from './errors.js';
import { closeOnSignals, Lifecycle } from './lifecycle.js';
import { createLogger, type Logger } from './log.js';
import { serveApi } from './main.js';
import { createRuntime } from './runtime.js';
import { MissingBinaryError } from './services/binaries.js';
import { localAdminToken, startLocalServices } from './services/local-stack.js';

const USAGE = `Usage: seckill <command>

Commands:
  up        start local redis-server + PostgreSQL (unless REDIS_URL / DATABASE_URL are set),
            migrate, then serve the API; Ctrl-C stops everything it started
  serve     serve the API against REDIS_URL / DATABASE_URL
  migrate   apply pending migrations and exit

Configuration comes from environment variables; see README.md#configuration.`;

const progress = (line: string) => process.stderr.write(`[seckill] ${line}\n`);

/** Friendly failure for errors that are the operator's to fix: message only, no stack. */
class ExitError extends Error {
  constructor(
    message: string,
    readonly code: number,
  ) {
    super(message);
  }
}

async function migrate(config: Config, logger: Logger): Promise<void> {
  const lifecycle = new Lifecycle(logger);
  const rt = createRuntime(config, logger, lifecycle);
  try {
    const applied = await migrateToLatest(rt.db);
    progress(
      applied.length ? `applied migrations: ${applied.join(', ')}` : 'database is up to date',
    );
  } finally {
    await lifecycle.close();
  }
}

async function up(): Promise<void> {
  const first = loadConfig(process.env, { AUTH_MODE: 'dev' });
  const config = loadConfig(process.env, {
    AUTH_MODE: 'dev',
    ADMIN_TOKEN: localAdminToken(first.launcher.dataDir),
  });
  const logger = createLogger(config);
  const lifecycle = new Lifecycle(logger);
  closeOnSignals(lifecycle, logger, Math.max(config.http.shutdownTimeoutMs, 30_000));
  try {
    await startLocalServices({
      config,
      lifecycle,
      progress,
      onCrash: (name, code, logFile) => {
        logger.fatal({ service: name, code, logFile }, 'a local server exited unexpectedly');
        void lifecycle.close().then(() => process.exit(1));
      },
    });
    const rt = createRuntime(config, logger, lifecycle);
    const applied = await migrateToLatest(rt.db);
    if (applied.length) progress(`applied migrations: ${applied.join(', ')}`);
    warnDevAuth(config);
    await serveApi(rt);
  } catch (err) {
    // Stop whatever already started: a failed start must not leave servers behind.
    await lifecycle.close();
    throw err;
  }
  const base = `http://${config.http.host}:${config.http.port}`;
  progress(
    `ready: ${base}/readyz   admin token in ${resolve(config.launcher.dataDir, 'admin-token')}   ` +
      'Ctrl-C stops everything',
  );
}

async function serve(config: Config): Promise<void> {
  const logger = createLogger(config);
  const rt = createRuntime(config, logger);
  closeOnSignals(rt.lifecycle, logger, config.http.shutdownTimeoutMs);
  warnDevAuth(config);
  await serveApi(rt);
}

function warnDevAuth(config: Config): void {
  if (config.auth.mode !== 'dev') return;
  progress(
    '!!! AUTH_MODE=dev: the shopper id is taken from the X-User-Id header without any check. ' +
      'For demos and load tests only; never expose this process. !!!',
  );
}

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
      return serve(loadConfig());
    case 'migrate': {
      const config = loadConfig(process.env, { AUTH_MODE: 'dev' });
      return migrate(config, createLogger(config));
    }
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
  if (err instanceof MissingBinaryError || err instanceof MigrationError) {
    process.stderr.write(`seckill: ${err.message}\n`);
    process.exit(1);
  }
  process.stderr.write(
    `seckill: ${err instanceof Error ? (err.stack ?? err.message) : messageOf(err)}\n`,
  );
  process.exit(1);
});
