/**
 * The variables as a person reads them: each one's default in words, `.env.example` (every
 * variable at its default) and docs/configuration.md, all from {@link envSchema} and its groups
 * (env-groups.ts) so they cannot drift from it.
 */
import { envSchema } from './env.js';
import { ENV_GROUPS } from './env-groups.js';
import { DEPRECATED_ENV, type DeprecatedName } from './deprecated.js';

export type EnvName = keyof typeof envSchema.shape;

/** Defaults that depend on other variables, said in words. */
const DERIVED_DEFAULTS: Partial<Record<EnvName, string>> = {
  REDIS_URL: 'redis://127.0.0.1:$LOCAL_REDIS_PORT (the one `up` runs)',
  DATABASE_URL: 'postgres://seckill@127.0.0.1:$LOCAL_PG_PORT/seckill (the one `up` runs)',
  AUTH_MODE: 'jwt (one-shot commands and `up`: dev)',
  ADMIN_TOKEN: 'none: the admin API is off (`up` generates one)',
  SALE_TOKEN_SECRET: 'none (`up` generates one)',
  PAYMENT_WEBHOOK_SECRET: 'none: the webhook is off (`up` generates one)',
  CHALLENGE_POW_SECRET: 'CHALLENGE_SECRET while CHALLENGE is pow, else none (`up` generates one)',
  CORS_ORIGINS: "none (`up`: the storefront example's origins)",
  RATE_LIMIT_USER_BURST: 'the rate',
  RATE_LIMIT_IP_BURST: 'the rate',
  PATH: "the shell's PATH",
  WEBHOOK_ALLOW_PRIVATE: 'false (`up`: true)',
};

/** The schema's default of a variable, or undefined when it has none. */
export function schemaDefault(name: EnvName): string | undefined {
  const def = envSchema.shape[name]._zod.def as { type: string; defaultValue?: unknown };
  return def.type === 'default' ? String(def.defaultValue) : undefined;
}

/** A variable's default as help shows it. */
export function envDefault(name: EnvName): string {
  return DERIVED_DEFAULTS[name] ?? schemaDefault(name) ?? 'none';
}

/** A description as plain text: a docs link `[text](page.md#part)` becomes `text (docs/page.md)`. */
export function plainDescription(name: EnvName): string {
  return (envSchema.shape[name].description ?? '').replace(
    /\[([^\]]+)\]\(([^)#]+)(#[^)]*)?\)/g,
    (_: string, text: string, page: string) =>
      text === page ? `docs/${page}` : `${text} (docs/${page})`,
  );
}

/** `# ` lines of at most 100 characters. */
function comment(text: string): string[] {
  const lines: string[] = [];
  let line = '#';
  for (const word of text.split(' ')) {
    if (line.length > 1 && line.length + 1 + word.length > 100) {
      lines.push(line);
      line = '#';
    }
    line += ` ${word}`;
  }
  return [...lines, line];
}

/** `.env.example`: every variable, by group, commented out at its default (a copy changes nothing). */
export function envExample(): string {
  const lines = [
    '# Every environment variable seckill reads (src/config/env.ts), commented out at its default:',
    '# uncomment what you change. docs/configuration.md says what each one does.',
    '# seckill reads its process environment, not this file: `set -a; . ./.env; set +a`, or',
    '# `node --env-file=.env dist/src/cli.js serve`. Written by `npm run env:example`.',
  ];
  for (const group of ENV_GROUPS) {
    lines.push('', '', `# ===== ${group.title} =====`, ...comment(group.intro));
    for (const name of group.names) {
      const derived = DERIVED_DEFAULTS[name];
      lines.push('', ...comment(plainDescription(name)));
      if (derived) lines.push(`# default: ${derived}`);
      // PATH's schema default is a fallback for an empty environment, not a value to copy
      lines.push(`# ${name}=${name === 'PATH' ? '' : (schemaDefault(name) ?? '')}`);
    }
  }
  return `${lines.join('\n')}\n`;
}

/** A default as the page's table shows it: the value in code, and what `up` does when it differs. */
function defaultCell(name: EnvName): string {
  const value = name === 'PATH' ? undefined : schemaDefault(name);
  const derived = DERIVED_DEFAULTS[name];
  if (value === undefined) return derived ?? '(none)';
  const rest = derived?.startsWith(`${value} `) ? derived.slice(value.length) : '';
  return `\`${value}\`${rest}`;
}

const PAGE_HEAD = `# Configuration

Every variable seckill reads, with its default and what it does, grouped: first the handful every
deployment sets, then one group per feature, then the tuning knobs. This page is written from the
schema (\`src/config/env.ts\`, grouped in \`src/config/env-groups.ts\`) by \`npm run env:example\`;
\`test/project/config.test.ts\` holds it equal to it. The README lists the ten most used.

## How it is read

- From the process environment, once, by \`src/config\`, and validated with zod. A bad or missing
  value stops the process with one message that lists every problem, exit code 2, never a stack
  trace.
- [\`.env.example\`](../.env.example) lists every variable, in the same groups, commented out at
  its default. seckill does not read that file itself: \`set -a; . ./.env; set +a\`, or
  \`node --env-file=.env dist/src/cli.js serve\`.
- \`seckill help <command>\` prints the variables that command reads, with their defaults.
- Times are milliseconds (\`_MS\`) unless the name ends in \`_S\` / \`_SECONDS\` / \`_HOURS\`. Booleans
  take \`true\`, \`false\`, \`1\`, \`0\`, \`yes\` or \`no\`. Rates are \`<n>/s\` or \`<n>/m\`.
`;

const PAGE_TAIL = `## Rules across variables

Each is reported together with the per-variable problems, and stops the process (exit 2):

- \`AUTH_MODE=jwt\` (the default outside \`up\`) needs \`JWT_SECRET\` or \`JWT_JWKS_URL\`;
  \`JWT_JWKS_URL\` needs \`JWT_ISSUER\` and \`JWT_AUDIENCE\`; \`NODE_ENV=production\` refuses
  \`AUTH_MODE=dev\`.
- \`DRAIN_MS\`, when set, must be shorter than \`SHUTDOWN_TIMEOUT_MS\`.
- \`REDIS_URL\` or \`REDIS_CLUSTER_NODES\`, not both.
- \`LOCAL_REDIS_SHARDS\` is 1, or 3 and more; \`LOCAL_REDIS_REPLICAS\` needs a local cluster; neither
  goes with \`REDIS_URL\` / \`REDIS_CLUSTER_NODES\` (then \`up\` starts no Redis). A local cluster's
  ports (nodes, then bus ports, from \`LOCAL_REDIS_PORT\`) must stay under 65536 and must not
  include \`LOCAL_PG_PORT\`.

## Read by other parts, not by the config

- \`NODE_CLUSTER_SCHED_POLICY\` (Node.js's own): unset, seckill's API processes accept their own
  connections; \`rr\` forces Node's round-robin through the primary ([operations.md](operations.md#a-burst-of-connections)).
- The test suite: \`TEST_REDIS_URL\` / \`TEST_DATABASE_URL\` make it use existing servers instead of
  starting its own.
- The k6 scripts' knobs (\`BASE_URL\`, \`ADMIN_TOKEN\`, \`RATE\`, ...): [benchmarks.md](benchmarks.md#k6).
- Docker Compose: \`REDIS_PASSWORD\`, \`POSTGRES_PASSWORD\`, \`API_PORT\`, \`API_CLUSTER_PORT\`,
  \`REDIS_MAXMEMORY\`, and \`K6_SCRIPT\` for its load profile ([operations.md](operations.md#docker-compose)).
`;

/** docs/configuration.md before prettier lays its tables out (tools/write-env-docs.ts writes it). */
export function configurationPage(): string {
  const parts = [PAGE_HEAD];
  for (const group of ENV_GROUPS) {
    parts.push(`## ${group.title}\n`, `${group.intro}\n`);
    const rows = group.names.map((name) => {
      const what = (envSchema.shape[name].description ?? '').replaceAll('|', '\\|');
      return `| \`${name}\` | ${defaultCell(name)} | ${what} |`;
    });
    parts.push(
      ['| variable | default | what it does |', '| - | - | - |', ...rows].join('\n') + '\n',
    );
    if (group.notes) parts.push(`${group.notes}\n`);
  }
  const deprecated = (Object.keys(DEPRECATED_ENV) as DeprecatedName[]).map(
    (name) => `- \`${name}\`: ${DEPRECATED_ENV[name].instead}.`,
  );
  parts.push(
    '## Deprecated\n',
    'Still read for this release, with a warning at start; ignored from the next one.\n',
    `${deprecated.join('\n')}\n`,
  );
  parts.push(PAGE_TAIL);
  return parts.join('\n');
}
