/**
 * `seckill <command>`: reads the command line (node's parseArgs, strict: an unknown flag is a
 * usage error, not a stack trace), runs the command, and turns what it throws into one message
 * and an exit code.
 *
 * Exit codes: 0 done; 1 it failed (a reconcile mismatch, a server that would not start, a store
 * that does not answer, a migration, a refused seed); 2 a usage or configuration error.
 */
import { parseArgs } from 'node:util';
import { redactText } from '../config/redact.js';
import { messageOf } from '../errors.js';
import { COMMANDS, type Command } from './command-table.js';
import { ExitError } from './output.js';
import { packageVersion } from '../version.js';

const find = (name: string) => COMMANDS.find((c) => c.name === name);

/** Help text (it reads the config schema's defaults): loaded past `--version`. */
type Help = typeof import('./help.js');

function unknownCommand(help: Help, name: string): ExitError {
  return new ExitError(`unknown command "${name}"\n\n${help.overview(COMMANDS)}`, 2);
}

async function main(argv: string[]): Promise<void> {
  const [name, ...rest] = argv;
  if (name === '--version' || name === '-V') {
    process.stdout.write(`seckill ${packageVersion()} (Node.js ${process.version})\n`);
    return;
  }
  const help = await import('./help.js');
  if (name === undefined || name === '--help' || name === '-h') {
    process.stdout.write(`${help.overview(COMMANDS)}\n`);
    if (name === undefined) process.exitCode = 2;
    return;
  }
  if (name === 'help') {
    if (rest.length === 0) return void process.stdout.write(`${help.overview(COMMANDS)}\n`);
    const asked = find(rest[0]!);
    if (!asked || rest.length > 1) throw unknownCommand(help, rest.join(' '));
    return void process.stdout.write(`${help.commandHelp(asked)}\n`);
  }
  const command = find(name);
  if (!command) throw unknownCommand(help, name);
  const { values, positionals } = parse(help, command, rest);
  if (values.help) return void process.stdout.write(`${help.commandHelp(command)}\n`);
  if (positionals.length !== command.args.length) {
    const wanted = command.args.length
      ? `takes ${command.args.map((a) => `<${a}>`).join(' ')}`
      : 'takes no arguments';
    throw new ExitError(
      `${name} ${wanted} (got ${positionals.length ? positionals.join(' ') : 'none'})\n\n${help.commandHelp(command)}`,
      2,
    );
  }
  return command.run(positionals, values);
}

function parse(help: Help, command: Command, args: string[]) {
  try {
    return parseArgs({
      args,
      allowPositionals: true,
      strict: true,
      options: { help: { type: 'boolean', short: 'h' }, ...command.flags },
    });
  } catch (err) {
    // ERR_PARSE_ARGS_*: an unknown option, a missing value; said in node's words
    const said = messageOf(err).split('. ')[0];
    throw new ExitError(`${command.name}: ${said}\n\n${help.commandHelp(command)}`, 2);
  }
}

const fail = (text: string, code: number): never => {
  process.stderr.write(`${redactText(text)}\n`);
  process.exit(code);
};

main(process.argv.slice(2)).catch(async (err: unknown) => {
  if (err instanceof ExitError) fail(`seckill: ${err.message}`, err.code);
  // the operator's errors, of modules a command loaded (loading them costs nothing more then)
  const [{ ConfigError }, { MigrationError }, { MissingBinaryError }, { LaunchError }] =
    await Promise.all([
      import('../config/index.js'),
      import('../db/migrate.js'),
      import('../launcher/binaries.js'),
      import('../launcher/process.js'),
    ]);
  if (err instanceof ConfigError) fail(`${err.message}\nSee docs/configuration.md.`, 2);
  if (
    err instanceof MissingBinaryError ||
    err instanceof MigrationError ||
    err instanceof LaunchError
  ) {
    fail(`seckill: ${err.message}`, 1);
  }
  // a bug: its message, and where it came from only when asked for (LOG_LEVEL=debug or trace)
  const where = /^(debug|trace)$/.test(process.env.LOG_LEVEL ?? '') && err instanceof Error;
  fail(
    `seckill: unexpected error: ${where ? err.stack : messageOf(err)}` +
      (where ? '' : '\n(LOG_LEVEL=debug shows where it came from)'),
    1,
  );
});
