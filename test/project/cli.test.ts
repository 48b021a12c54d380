/**
 * The CLI as a person meets it, each case a real child process: what it says on stderr, and its
 * exit code. No stack frame, no client library's retry error, no password, ever.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { COMMANDS } from '../../src/cli/command-table.js';
import { envSchema } from '../../src/config/index.js';
import { Keys } from '../../src/redis/keys.js';
import { runCli, waitFor, type CliRun } from '../support/cli.js';
import { useNamespace } from '../support/namespace.js';
import { freePort } from '../support/ports.js';
import { tempDir } from '../support/servers.js';
import { META_FIELD } from '../../src/inventory/records/hash-fields.js';

const ROOT = join(import.meta.dirname, '..', '..');
const ns = useNamespace();
const running: CliRun[] = [];
afterEach(async () => {
  for (const run of running.splice(0)) {
    if (run.child.exitCode === null) run.child.kill('SIGTERM');
    await run.exited;
  }
});

/** Runs the CLI to its end: exit code, stderr, stdout. */
async function cli(args: string[], env: Record<string, string> = {}, nodeArgs?: string[]) {
  const run = runCli(args, env, { nodeArgs });
  running.push(run);
  const code = await run.exited;
  return { code, err: run.stderr(), out: run.stdout() };
}

const NO_STACK = /^\s+at /m;
const PASSWORD = 'hunter2pw';

/** Ports nothing listens on (taken free, then left unused). */
async function deadStores() {
  return { LOCAL_REDIS_PORT: String(await freePort()), LOCAL_PG_PORT: String(await freePort()) };
}

describe('seckill on an older Node.js', () => {
  it('says in one line which Node.js it needs, and exits 1 before loading anything', async () => {
    const fake20 = `data:text/javascript,Object.defineProperty(process.versions,"node",{value:"20.19.0"})`;
    const r = await cli(['--version'], {}, ['--import', fake20]);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(
      /^seckill: Node\.js 24 or newer is needed; this is 20\.19\.0 \(.+\)\. Install/,
    );
    expect(r.err.trimEnd().split('\n')).toHaveLength(1);
    expect(r.out).toBe('');
  });

  it('needs the Node.js major that package.json, the Dockerfile and CI name', () => {
    const min = /MIN_NODE_MAJOR = (\d+);/.exec(readFileSync(join(ROOT, 'src/cli.ts'), 'utf8'))![1];
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      engines: { node: string };
    };
    expect(pkg.engines.node).toBe(`>=${min}`);
    const docker = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
    expect(docker.match(/^FROM node:(\d+)-/gm)).toEqual([`FROM node:${min}-`, `FROM node:${min}-`]);
    // .ci/node.sh reads the major from engines; the suite itself runs on it (CI puts it first)
    expect(Number(process.versions.node.split('.')[0])).toBeGreaterThanOrEqual(Number(min));
  });
});

describe('configuration errors', () => {
  it('a URL with a bad port: exit 2, one message naming the port, the password masked', async () => {
    const r = await cli(['serve'], {
      AUTH_MODE: 'dev',
      REDIS_URL: `redis://:${PASSWORD}@localhost:6381x`,
    });
    expect(r.code).toBe(2);
    expect(r.err).toBe(
      'Invalid configuration:\n' +
        '  - REDIS_URL: port "6381x" is not a number from 1 to 65535 (e.g. redis://localhost:6379) ' +
        '(got "redis://:***@localhost:6381x")\n' +
        'See docs/configuration.md.\n',
    );
  });

  it('never echoes a password of a URL it refuses', async () => {
    const r = await cli(['migrate'], { DATABASE_URL: `mysql://u:${PASSWORD}@h/db` });
    expect(r.code).toBe(2);
    expect(r.err).toContain(
      'DATABASE_URL: must start with postgres:// or postgresql:// (got "mysql://u:***@h/db")',
    );
    expect(r.err + r.out).not.toContain(PASSWORD);
  });
});

describe('a store that does not answer', () => {
  it.each([
    [
      ['migrate'],
      'PostgreSQL at postgres://seckill@127.0.0.1:PG/seckill',
      'set DATABASE_URL or LOCAL_PG_PORT',
    ],
    [
      ['seed', 'p', '--total', '5'],
      'Redis at redis://127.0.0.1:REDIS',
      'set REDIS_URL or LOCAL_REDIS_PORT',
    ],
    [['reconcile', 'p'], 'Redis at redis://127.0.0.1:REDIS', 'set REDIS_URL or LOCAL_REDIS_PORT'],
  ])('%j: one line saying what was tried and what to do, exit 1', async (args, where, todo) => {
    const ports = await deadStores();
    const r = await cli(args, ports);
    expect(r.code).toBe(1);
    const tried = where.replace('PG', ports.LOCAL_PG_PORT).replace('REDIS', ports.LOCAL_REDIS_PORT);
    expect(r.err).toMatch(
      new RegExp(
        `^seckill: no ${tried.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(.*ECONNREFUSED.*\\): is "npm start" running\\? ${todo}\n$`,
      ),
    );
    expect(r.err + r.out).not.toMatch(/MaxRetriesPerRequest|\n\s+at /);
  });

  it('given URLs: names them with their passwords masked, and the variable to check', async () => {
    const ports = await deadStores();
    const env = {
      REDIS_URL: `redis://:${PASSWORD}@127.0.0.1:${ports.LOCAL_REDIS_PORT}`,
      DATABASE_URL: `postgres://u:${PASSWORD}@127.0.0.1:${ports.LOCAL_PG_PORT}/db`,
    };
    const reconcile = await cli(['reconcile', 'p'], env);
    expect(reconcile.code).toBe(1);
    expect(reconcile.err).toMatch(
      new RegExp(
        `^seckill: no Redis at redis://:\\*\\*\\*@127\\.0\\.0\\.1:${ports.LOCAL_REDIS_PORT} \\(.+\\): is it running\\? check REDIS_URL\n$`,
      ),
    );
    // up with both URLs given starts no server, and stops at PostgreSQL (Redis may come later)
    const dir = tempDir('cli-up');
    try {
      const up = await cli(['up'], { ...env, PORT: String(await freePort()), DATA_DIR: dir.path });
      expect(up.code).toBe(1);
      expect(up.err).toMatch(
        new RegExp(
          `\nseckill: no PostgreSQL at postgres://u:\\*\\*\\*@127\\.0\\.0\\.1:${ports.LOCAL_PG_PORT}/db \\(.+\\): is it running\\? check DATABASE_URL\n$`,
        ),
      );
      for (const r of [reconcile, up]) {
        expect(r.err + r.out).not.toContain(PASSWORD);
        expect(r.err + r.out).not.toMatch(NO_STACK);
      }
    } finally {
      dir.remove();
    }
  });
});

describe('help and version', () => {
  it('--version prints the package version and the Node.js version', async () => {
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      version: string;
    };
    const r = await cli(['--version']);
    expect(r.code).toBe(0);
    expect(r.out).toBe(`seckill ${version} (Node.js ${process.version})\n`);
  });

  it("help <command> is that command's help, with its options' and variables' defaults", async () => {
    const viaHelp = await cli(['help', 'seed']);
    const viaFlag = await cli(['seed', '--help']);
    expect(viaHelp.code).toBe(0);
    expect(viaHelp.out).toBe(viaFlag.out);
    expect(viaHelp.out).toMatch(/^Usage: seckill seed <product> --total N/);
    expect(viaHelp.out).toMatch(
      /^ {2}--strategy NAME +segmented, global or lockfree \(default: segmented\)$/m,
    );
    expect(viaHelp.out).toMatch(/^ {2}LOCAL_REDIS_PORT +default: 6380; /m);
    expect(viaHelp.out).toMatch(/^ {2}KEY_PREFIX +default: sk; /m);
    const migrate = await cli(['help', 'migrate']);
    expect(migrate.out).toMatch(/^ {2}LOCAL_PG_PORT +default: 5433; /m);
    expect(migrate.out).toMatch(/^ {2}PG_STATEMENT_TIMEOUT_MS +default: 5000; /m);
    const bogus = await cli(['help', 'frobnicate']);
    expect(bogus.code).toBe(2);
    expect(bogus.err).toMatch(/^seckill: unknown command "frobnicate"/);
  });

  it('every command lists the variables it reads, each one the config knows', () => {
    const known = Object.keys(envSchema.shape);
    for (const c of COMMANDS) {
      expect(c.env.length, c.name).toBeGreaterThan(0);
      expect(
        c.env.filter((v) => !known.includes(v)),
        c.name,
      ).toEqual([]);
    }
  });
});

describe('seed', () => {
  it('says what a number flag expects, not "received NaN"', async () => {
    const r = await cli(['seed', 'p', '--total', 'abc', '--limit-per-user', '1.5']);
    expect(r.code).toBe(2);
    expect(r.err).toBe(
      'seckill: invalid seed:\n' +
        '  --total: expected a whole number, e.g. --total 100 (got "abc")\n' +
        '  --limit-per-user: expected a whole number, e.g. --limit-per-user 100 (got "1.5")\n',
    );
  });

  it('refuses a sale that needs sale tokens where none can be issued, and seeds nothing', async () => {
    const env = { REDIS_URL: ns.redisUrl, DATABASE_URL: ns.databaseUrl, KEY_PREFIX: ns.id };
    const product = `${ns.id}-t`;
    const r = await cli(['seed', product, '--total', '5', '--require-sale-token'], env);
    expect(r.code).toBe(2);
    expect(r.err).toBe(
      'seckill: invalid seed:\n' +
        '  --require-sale-token: requireSaleToken: this deployment issues no sale tokens ' +
        '(SALE_TOKEN_SECRET is not set): set it on the API processes, or seed without ' +
        'requireSaleToken\n',
    );
    const redis = new Redis(ns.redisUrl);
    expect(await redis.exists(new Keys(ns.id).product(product).meta)).toBe(0);
    redis.disconnect();
    const withSecret = await cli(['seed', product, '--total', '5', '--require-sale-token'], {
      ...env,
      SALE_TOKEN_SECRET: 's'.repeat(40),
    });
    expect(withSecret.code, withSecret.err).toBe(0);
    expect(withSecret.out).toMatch(/sale token {2}required/);
  });

  it('seeds a waiting room with its three flags, and refuses a bad one naming the flag', async () => {
    const env = {
      REDIS_URL: ns.redisUrl,
      DATABASE_URL: ns.databaseUrl,
      KEY_PREFIX: ns.id,
      SALE_TOKEN_SECRET: 's'.repeat(40),
    };
    const product = `${ns.id}-room`;
    const flags = ['--admit-per-second', '50', '--max-active', '200', '--admitted-for', '120'];
    const bad = await cli(
      ['seed', product, '--total', '5', ...flags.slice(0, 4), '--admitted-for', '1'],
      env,
    );
    expect(bad.code).toBe(2);
    expect(bad.err).toBe(
      'seckill: invalid seed:\n  --admitted-for: Too small: expected number to be >=5\n',
    );
    const redis = new Redis(ns.redisUrl);
    expect(await redis.exists(new Keys(ns.id).product(product).meta)).toBe(0);
    const r = await cli(['seed', product, '--total', '5', ...flags], env);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/room {8}50\/s, at most 200 active, admitted for 120 s/);
    expect(r.out).toMatch(/sale token {2}required/);
    expect(await redis.hget(new Keys(ns.id).product(product).meta, META_FIELD.waitingRoom)).toBe(
      '50 200 120',
    );
    redis.disconnect();
  });

  it("sets the product's door with --challenge, and refuses a bad kind or one without its key", async () => {
    const env = { REDIS_URL: ns.redisUrl, DATABASE_URL: ns.databaseUrl, KEY_PREFIX: ns.id };
    const product = `${ns.id}-door`;
    const meta = new Keys(ns.id).product(product).meta;
    const bad = await cli(['seed', product, '--total', '5', '--challenge', 'captcha'], env);
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/^seckill: invalid seed:\n {2}--challenge: /);
    const keyless = await cli(['seed', product, '--total', '5', '--challenge', 'turnstile'], env);
    expect(keyless.code).toBe(2);
    expect(keyless.err).toMatch(/--challenge: challenge: this deployment has no key for turnstile/);
    const redis = new Redis(ns.redisUrl);
    expect(await redis.exists(meta)).toBe(0);
    const pow = await cli(
      ['seed', product, '--total', '5', '--challenge', 'pow', '--challenge-floor-ms', '500'],
      { ...env, CHALLENGE_POW_SECRET: 'a-pow-hmac-key-0123456789' },
    );
    expect(pow.code, pow.err).toBe(0);
    expect(await redis.hget(meta, META_FIELD.challenge)).toBe('pow 500');
    const off = await cli(['seed', product, '--total', '5', '--challenge', 'off', '--force'], env);
    expect(off.code, off.err).toBe(0);
    expect(await redis.hget(meta, META_FIELD.challenge)).toBe('off');
    redis.disconnect();
  });

  it('prices a sale with --price and --currency, and refuses a bad one naming the flag', async () => {
    const env = { REDIS_URL: ns.redisUrl, DATABASE_URL: ns.databaseUrl, KEY_PREFIX: ns.id };
    const product = `${ns.id}-priced`;
    const bad = await cli(
      ['seed', product, '--total', '5', '--price', '1999', '--currency', 'EURO'],
      env,
    );
    expect(bad.code).toBe(2);
    expect(bad.err).toBe(
      'seckill: invalid seed:\n  --currency: must be an ISO 4217 currency code in upper case (EUR)\n',
    );
    const none = await cli(
      ['seed', product, '--total', '5', '--price', '19.99', '--currency', 'EUR'],
      env,
    );
    expect(none.err).toMatch(/--price: expected a whole number/);
    const redis = new Redis(ns.redisUrl);
    expect(await redis.exists(new Keys(ns.id).product(product).meta)).toBe(0);
    const r = await cli(
      ['seed', product, '--total', '5', '--price', '1999', '--currency', 'EUR'],
      env,
    );
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/price {7}1999 EUR \(minor units\) a unit/);
    expect(await redis.hget(new Keys(ns.id).product(product).meta, META_FIELD.price)).toBe(
      '1999 EUR',
    );
    redis.disconnect();
  });

  it('prints a summary for a person, and the JSON line with --json', async () => {
    const env = { REDIS_URL: ns.redisUrl, DATABASE_URL: ns.databaseUrl, KEY_PREFIX: ns.id };
    const human = await cli(
      ['seed', `${ns.id}-a`, '--total', '10', '--segments', '3', '--pay-within', '60'],
      env,
    );
    expect(human.err).toBe('');
    expect(human.code).toBe(0);
    expect(human.out).toBe(
      [
        `seeded "${ns.id}-a" (epoch 1): 10 units over 3 segments, segmented strategy`,
        '  per buyer   1',
        '  price       none',
        '  payment     within 60 s, or the units go back on sale',
        '  sale token  not required',
        '  on sale     from now until sold out',
        '',
      ].join('\n'),
    );
    const json = await cli(
      ['seed', `${ns.id}-b`, '--total', '10', '--segments', '3', '--json'],
      env,
    );
    expect(json.code).toBe(0);
    expect(JSON.parse(json.out)).toEqual({
      productId: `${ns.id}-b`,
      epoch: 1,
      carried: 0,
      segments: [4, 3, 3],
    });
  });
});

describe('serve', () => {
  it('says at start that the admin API is disabled without ADMIN_TOKEN, and where it is with one', async () => {
    for (const [token, said] of [
      [
        undefined,
        /^\[seckill\] admin API disabled: ADMIN_TOKEN is not set, so \/admin\/\* answers 403/m,
      ],
      [
        'a'.repeat(16),
        /^\[seckill\] admin API at http:\/\/127\.0\.0\.1:\d+\/admin\/ \(Authorization: Bearer \$ADMIN_TOKEN\)$/m,
      ],
    ] as const) {
      const run = runCli(['serve'], {
        ...(await deadStores()),
        AUTH_MODE: 'dev',
        PORT: String(await freePort()),
        LOG_LEVEL: 'error',
        ...(token && { ADMIN_TOKEN: token }),
      });
      running.push(run);
      await waitFor(
        () => `the admin line in ${run.stderr()}`,
        async () => said.test(run.stderr()),
        30_000,
      );
      expect(run.stderr()).not.toContain(token ?? PASSWORD);
    }
  });
});

describe('logs', () => {
  // a command that logs a warning (its Redis refuses), then ends
  const args = ['reconcile', 'p'];
  const env = async () => ({ ...(await deadStores()), LOG_LEVEL: 'warn' });

  it('are JSON lines when stdout is not a terminal', async () => {
    const r = await cli(args, await env());
    const lines = r.out.trimEnd().split('\n');
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(JSON.parse(line)).toMatchObject({ level: 40 });
  });

  it.skipIf(!hasScript())('are readable lines, not JSON, when stdout is a terminal', async () => {
    const e = await env();
    const command = [process.execPath, '--import', 'tsx', 'src/cli.ts', ...args].join(' ');
    // script(1) runs the command on a pseudo-terminal
    const out = spawnSync('script', ['-qec', command, '/dev/null'], {
      cwd: ROOT,
      env: { HOME: process.env.HOME ?? '/root', PATH: process.env.PATH ?? '', ...e },
      encoding: 'utf8',
      timeout: 60_000,
    }).stdout.replace(/\x1b\[[0-9;]*m|\r/g, '');
    expect(out).toMatch(/^\[[\d:. ]+\] WARN \(seckill\/\d+\): redis connection error$/m);
    expect(out).not.toContain('{"level"');
  });

  it('mask a URL password in any field, message or error', () => {
    const code = [
      "import { createLogger } from './src/log.ts';",
      "const log = createLogger({ log: { level: 'info' } });",
      `log.warn({ gone: undefined, none: null, n: 1, url: 'redis://:${PASSWORD}@h:1', nested: { db: 'postgres://u:${PASSWORD}@h/x' }, err: new Error('no postgres://u:${PASSWORD}@h/x') }, 'tried rediss://:${PASSWORD}@h:2');`,
    ].join('\n');
    const out = execFileSync(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', code],
      {
        cwd: ROOT,
        encoding: 'utf8',
      },
    );
    const line = JSON.parse(out) as Record<string, any>;
    expect(out).not.toContain(PASSWORD);
    expect(line.url).toBe('redis://:***@h:1');
    expect([line.gone, line.none, line.n]).toEqual([undefined, null, 1]);
    expect(line.nested.db).toBe('postgres://u:***@h/x');
    expect(line.err.message).toBe('no postgres://u:***@h/x');
    expect(line.msg).toBe('tried rediss://:***@h:2');
  });
});

function hasScript(): boolean {
  try {
    execFileSync('script', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
