import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { format, resolveConfig } from 'prettier';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, envExample, envSchema, loadConfig } from '../../src/config/index.js';
import { configurationPage } from '../../src/config/env-docs.js';
import { ENV_GROUPS } from '../../src/config/env-groups.js';
import { DEPRECATED_ENV } from '../../src/config/deprecated.js';
import { runCli, waitFor, type CliRun } from '../support/cli.js';
import { useNamespace } from '../support/namespace.js';
import { freePort } from '../support/ports.js';

const ROOT = join(import.meta.dirname, '..', '..');
const ns = useNamespace();
const running: CliRun[] = [];
afterEach(async () => {
  for (const run of running.splice(0)) {
    if (run.child.exitCode === null) run.child.kill('SIGTERM');
    await run.exited;
  }
});

const base = { AUTH_MODE: 'dev' };

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems;
  }
  throw new Error('expected a ConfigError');
}

describe('config', () => {
  it('gives documented defaults and points at the launcher-run servers when no URLs are set', () => {
    const c = loadConfig(base);
    expect(c.http.port).toBe(3000);
    expect(c.redis.url).toBe('redis://127.0.0.1:6380');
    expect(c.postgres.url).toBe('postgres://seckill@127.0.0.1:5433/seckill');
    expect(c.launcher.useExternalRedis).toBe(false);
    expect(c.lock.watchdogTimeoutMs).toBe(30_000);
    expect(c.redis.queuePrefix).toBe('{skq}');
  });

  it('limits joins, polls and purchases per shopper and per address out of the box (issue 46); off turns each off', () => {
    const { admission } = loadConfig(base);
    const of = (l: typeof admission.userLimit) => l && [l.rate, l.periodMs, l.burst];
    expect(of(admission.userLimit)).toEqual([5, 1_000, 5]);
    expect(of(admission.ipLimit)).toEqual([200, 1_000, 200]);
    expect(of(admission.pollLimit)).toEqual([100, 1_000, 100]);
    const off = loadConfig({
      ...base,
      RATE_LIMIT_USER: 'off',
      RATE_LIMIT_IP: 'off',
      RATE_LIMIT_POLL_IP: 'off',
    }).admission;
    expect([off.userLimit, off.ipLimit, off.pollLimit]).toEqual([undefined, undefined, undefined]);
  });

  it('is deeply frozen', () => {
    const c = loadConfig(base);
    expect(Object.isFrozen(c)).toBe(true);
    expect(Object.isFrozen(c.http)).toBe(true);
    expect(() => {
      (c.http as { port: number }).port = 1;
    }).toThrow(TypeError);
  });

  it('coerces numbers and booleans from strings', () => {
    const c = loadConfig({
      ...base,
      PORT: '8080',
      AUTO_INSTALL: 'false',
      REDIS_URL: 'redis://h:1',
    });
    expect(c.http.port).toBe(8080);
    expect(c.launcher.autoInstall).toBe(false);
    expect(c.launcher.useExternalRedis).toBe(true);
    expect(c.redis.url).toBe('redis://h:1');
  });

  it('names a bad PORT and what it got', () => {
    expect(problemsOf({ ...base, PORT: 'abc' })).toEqual([
      expect.stringMatching(/^PORT: .*\(got "abc"\)$/),
    ]);
  });

  it('reports every bad variable at once', () => {
    const problems = problemsOf({
      PORT: '70000',
      REDIS_URL: 'http://x',
      LOG_LEVEL: 'loud',
      AUTH_MODE: 'jwt',
      QUEUE_PREFIX: 'nobraces',
    });
    expect(problems.map((p) => p.split(':')[0]).sort()).toEqual(
      ['JWT_SECRET', 'LOG_LEVEL', 'PORT', 'QUEUE_PREFIX', 'REDIS_URL'].sort(),
    );
    expect(new ConfigError(problems).message.split('\n')).toHaveLength(problems.length + 1);
  });

  it('requires a JWT secret in jwt mode and refuses dev auth in production', () => {
    expect(problemsOf({ AUTH_MODE: 'jwt' })).toEqual([expect.stringContaining('JWT_SECRET')]);
    expect(problemsOf({ AUTH_MODE: 'dev', NODE_ENV: 'production' })).toEqual([
      expect.stringContaining('AUTH_MODE'),
    ]);
    expect(loadConfig({ JWT_SECRET: 'x'.repeat(32) }).auth.mode).toBe('jwt');
  });

  it('names a bad secret but never echoes its value', () => {
    const secrets = {
      JWT_SECRET: 'short-jwt-secret',
      ADMIN_TOKEN: 'tok',
      PAYMENT_WEBHOOK_SECRET: 'short-webhook',
      SALE_TOKEN_SECRET: 'short-sale',
    };
    let message = '';
    try {
      loadConfig({ AUTH_MODE: 'jwt', ...secrets });
    } catch (err) {
      message = (err as Error).message;
    }
    for (const [name, value] of Object.entries(secrets)) {
      expect(message).toMatch(new RegExp(`${name}: `));
      expect(message).not.toContain(value);
    }
    // other values are still shown, to help
    expect(() => loadConfig({ AUTH_MODE: 'dev', PORT: 'abc' })).toThrow(/got "abc"/);
  });

  it('treats empty strings as unset and lets defaults fill gaps', () => {
    const c = loadConfig({ PORT: '', AUTH_MODE: '' }, { AUTH_MODE: 'dev' });
    expect(c.http.port).toBe(3000);
    expect(c.auth.mode).toBe('dev');
  });

  it('shapes a Redis Cluster: seed nodes given, or the local masters from LOCAL_REDIS_PORT', () => {
    const given = loadConfig({ ...base, REDIS_CLUSTER_NODES: 'r1:7000,10.0.0.2:7001' });
    expect(given.redis.cluster).toEqual([
      { host: 'r1', port: 7000 },
      { host: '10.0.0.2', port: 7001 },
    ]);
    expect(given.launcher.useExternalRedis).toBe(true);
    const local = loadConfig({ ...base, LOCAL_REDIS_SHARDS: '3', LOCAL_REDIS_PORT: '7100' });
    expect(local.redis.cluster).toEqual(
      [7100, 7101, 7102].map((port) => ({ host: '127.0.0.1', port })),
    );
    expect(local.launcher).toMatchObject({
      redisShards: 3,
      redisReplicas: 0,
      useExternalRedis: false,
    });
    expect(loadConfig(base).redis.cluster).toBeUndefined();
    expect(loadConfig({ ...base, API_PROCESSES: '4' }).api.processes).toBe(4);
  });

  it('refuses cluster settings that cannot work, each with its reason', () => {
    const cases: Array<[Record<string, string>, string, RegExp]> = [
      [{ REDIS_URL: 'redis://a:1', REDIS_CLUSTER_NODES: 'a:1' }, 'REDIS_CLUSTER_NODES', /not both/],
      [{ REDIS_CLUSTER_NODES: 'a:1, b' }, 'REDIS_CLUSTER_NODES', /host:port/],
      [{ LOCAL_REDIS_SHARDS: '2' }, 'LOCAL_REDIS_SHARDS', /at least 3/],
      [{ LOCAL_REDIS_REPLICAS: '1' }, 'LOCAL_REDIS_REPLICAS', /LOCAL_REDIS_SHARDS >= 3/],
      [{ LOCAL_REDIS_SHARDS: '3', REDIS_URL: 'redis://a:1' }, 'LOCAL_REDIS_SHARDS', /starts none/],
      [{ LOCAL_REDIS_SHARDS: '3', LOCAL_REDIS_PORT: '65531' }, 'LOCAL_REDIS_PORT', /past 65535/],
      [
        { LOCAL_REDIS_SHARDS: '3', LOCAL_REDIS_PORT: '5430' },
        'LOCAL_PG_PORT',
        /inside the local Redis Cluster/,
      ],
      [{ API_PROCESSES: '0' }, 'API_PROCESSES', /./],
      [{ REDIS_WAIT_REPLICAS: '9' }, 'REDIS_WAIT_REPLICAS', /./],
    ];
    for (const [env, variable, why] of cases) {
      const problems = problemsOf({ ...base, ...env });
      const mine = problems.find((p) => p.startsWith(`${variable}:`));
      expect(mine, `${JSON.stringify(env)} -> ${problems.join(' | ')}`).toMatch(why);
    }
  });

  it('says an unknown value of a variable with a fixed set of values, and what it got', () => {
    expect(problemsOf({ AUTH_MODE: 'magic' })).toEqual([
      expect.stringMatching(/^AUTH_MODE: .*"jwt".*"dev".*\(got "magic"\)$/),
    ]);
    expect(problemsOf({ ...base, FAST_PATH: 'maybe' })).toEqual([
      expect.stringMatching(/^FAST_PATH: .*\(got "maybe"\)$/),
    ]);
  });
});

describe('the groups (docs/configuration.md and .env.example)', () => {
  it('hold every variable of the schema exactly once: the handful every deployment sets first, tuning last', () => {
    const grouped = ENV_GROUPS.flatMap((g) => g.names);
    expect([...grouped].sort()).toEqual(Object.keys(envSchema.shape).sort());
    expect(new Set(grouped).size).toBe(grouped.length);
    expect(ENV_GROUPS[0]!.title).toBe('Every deployment sets');
    expect(ENV_GROUPS[0]!.names).toEqual(
      expect.arrayContaining(['REDIS_URL', 'DATABASE_URL', 'PORT', 'AUTH_MODE']),
    );
    expect(ENV_GROUPS.at(-1)!.title).toBe('Tuning');
    expect(ENV_GROUPS.at(-1)!.intro).toMatch(/^Leave these alone unless /);
    for (const g of ENV_GROUPS) expect(g.intro, g.title).not.toContain('\n');
  });

  it('docs/configuration.md is the page written from the schema (npm run env:example)', async () => {
    const path = join(ROOT, 'docs', 'configuration.md');
    const page = readFileSync(path, 'utf8');
    const options = (await resolveConfig(path)) ?? {};
    expect(page, 'stale: run `npm run env:example`').toBe(
      await format(configurationPage(), { ...options, filepath: path }),
    );
    // the groups in their order, each with its intro line, then the deprecated names
    const headings = [...page.matchAll(/^## (.+)\n\n(.+)$/gm)].map((m) => [m[1], m[2]]);
    const groups = headings.filter(([title]) => ENV_GROUPS.some((g) => g.title === title));
    expect(groups).toEqual(ENV_GROUPS.map((g) => [g.title, g.intro]));
    const deprecated = page.split('## Deprecated')[1]!.split('\n## ')[0]!;
    for (const name of Object.keys(DEPRECATED_ENV)) expect(deprecated).toContain(`\`${name}\``);
  });

  it('.env.example shows the same groups in the same order, each variable under its own', () => {
    const file = envExample();
    const titles = [...file.matchAll(/^# ===== (.+) =====$/gm)].map((m) => m[1]);
    expect(titles).toEqual(ENV_GROUPS.map((g) => g.title));
    const sections = file.split(/^# ===== .+ =====$/m).slice(1);
    ENV_GROUPS.forEach((g, i) => {
      const names = [...sections[i]!.matchAll(/^# ([A-Z][A-Z0-9_]*)=/gm)].map((m) => m[1]);
      expect(names, g.title).toEqual(g.names);
    });
  });
});

describe('deprecated variables', () => {
  it('CLAIM_TTL_MS: derived from IDEMPOTENCY_LEASE_MS; the old name still works, with a warning', () => {
    expect(loadConfig(base).sale.claimTtlMs).toBe(10_000);
    expect(loadConfig(base).deprecations).toEqual([]);
    expect(loadConfig({ ...base, IDEMPOTENCY_LEASE_MS: '4000' }).sale.claimTtlMs).toBe(4_000);
    const old = loadConfig({ ...base, CLAIM_TTL_MS: '1500' });
    expect(old.sale.claimTtlMs).toBe(1_500);
    expect(old.sale.idempotencyLeaseMs).toBe(10_000);
    expect(old.deprecations).toEqual([
      expect.stringMatching(/^CLAIM_TTL_MS is deprecated .*: set IDEMPOTENCY_LEASE_MS$/),
    ]);
    expect(problemsOf({ ...base, CLAIM_TTL_MS: 'soon' })).toEqual([
      expect.stringMatching(/^CLAIM_TTL_MS: .*\(got "soon"\)$/),
    ]);
  });

  it('ROOM_SHUFFLE_SEED: a test setting, no variable; the old name still works, with a warning', () => {
    expect(loadConfig(base).room.shuffleSeed).toBeUndefined();
    const old = loadConfig({ ...base, ROOM_SHUFFLE_SEED: '42' });
    expect(old.room.shuffleSeed).toBe(42);
    expect(old.deprecations).toEqual([expect.stringMatching(/^ROOM_SHUFFLE_SEED is deprecated /)]);
    expect(problemsOf({ ...base, ROOM_SHUFFLE_SEED: '0' })).toEqual([
      expect.stringMatching(/^ROOM_SHUFFLE_SEED: /),
    ]);
  });

  it('`seckill serve` logs the warning at start and serves; a bad value stops it with exit 2', async () => {
    const port = await freePort();
    const run = runCli(['serve'], {
      AUTH_MODE: 'dev',
      REDIS_URL: ns.redisUrl,
      DATABASE_URL: ns.databaseUrl,
      KEY_PREFIX: ns.id,
      QUEUE_PREFIX: `{${ns.id}q}`,
      PORT: String(port),
      LOG_LEVEL: 'warn',
      CLAIM_TTL_MS: '1500',
    });
    running.push(run);
    await waitFor(
      () => `/readyz 200 from serve; it said ${run.output()}`,
      async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).ok,
      30_000,
    );
    const warnings = run
      .stdout()
      .split('\n')
      .filter((line) => line.includes('is deprecated'))
      .map((line) => JSON.parse(line) as { level: number; msg: string });
    expect(warnings).toEqual([
      expect.objectContaining({
        level: 40,
        msg: expect.stringMatching(/^CLAIM_TTL_MS is deprecated/),
      }),
    ]);

    const bad = runCli(['serve'], { AUTH_MODE: 'dev', CLAIM_TTL_MS: '-5' });
    running.push(bad);
    expect(await bad.exited).toBe(2);
    expect(bad.stderr()).toMatch(/^Invalid configuration:\n {2}- CLAIM_TTL_MS: .*\(got "-5"\)\n/);
  });
});
