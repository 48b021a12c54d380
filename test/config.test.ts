import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config/index.js';

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

  it('treats empty strings as unset and lets defaults fill gaps', () => {
    const c = loadConfig({ PORT: '', AUTH_MODE: '' }, { AUTH_MODE: 'dev' });
    expect(c.http.port).toBe(3000);
    expect(c.auth.mode).toBe('dev');
  });
});
