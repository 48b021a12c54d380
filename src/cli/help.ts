/**
 * Help text: each command's usage, its options with their defaults, and the environment
 * variables it reads with theirs (taken from the config schema, so they cannot drift).
 */
import { envDefault, envSchema, plainDescription, type EnvName } from '../config/index.js';

export interface OptionHelp {
  /** as typed, e.g. `--total N` */
  flag: string;
  what: string;
}

export interface CommandHelp {
  name: string;
  /** after `seckill <name>`: positional arguments and the main flags */
  synopsis: string;
  what: string;
  options?: OptionHelp[];
  /** variables of {@link envSchema} this command reads */
  env: string[];
}

const table = (rows: Array<[string, string]>) => {
  const width = Math.max(...rows.map(([a]) => a.length)) + 2;
  return rows.map(([a, b]) => `  ${a.padEnd(width)}${b}`).join('\n');
};

export const CONFIG_HINT = 'Every variable, with its default: docs/configuration.md.';

/** The full help of one command. */
export function commandHelp(command: CommandHelp): string {
  const parts = [
    `Usage: seckill ${command.name}${command.synopsis ? ` ${command.synopsis}` : ''}`,
    '',
    command.what,
  ];
  const options = [...(command.options ?? []), { flag: '-h, --help', what: 'this help' }];
  parts.push('', 'Options:', table(options.map((o) => [o.flag, o.what])));
  const env = command.env.map((name): [string, string] => {
    const description = name in envSchema.shape && plainDescription(name as EnvName);
    return [
      name,
      `default: ${envDefault(name as EnvName)}${description ? `; ${description}` : ''}`,
    ];
  });
  parts.push('', 'Environment:', table(env), '', CONFIG_HINT);
  return parts.join('\n');
}

/** The overview: every command in one line each. */
export function overview(commands: CommandHelp[]): string {
  return [
    'Usage: seckill <command> [options]',
    '',
    'Commands:',
    table(commands.map((c) => [`${c.name}${c.synopsis ? ` ${c.synopsis}` : ''}`, c.what])),
    '',
    'seckill help <command> (or <command> --help): its options, and the variables it reads.',
    'seckill --version: the version of seckill and of Node.js.',
    'Exit codes: 0 done, 1 failed, 2 usage or configuration error.',
    CONFIG_HINT,
  ].join('\n');
}
