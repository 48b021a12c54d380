import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

// No Docker engine runs on the build machines: parse the files and check their wiring instead.
const ROOT = join(import.meta.dirname, '..', '..');

interface Service {
  image?: string;
  build?: string;
  command?: string[];
  ports?: string[];
  environment?: Record<string, string>;
  healthcheck?: { test: string[] };
  depends_on?: Record<string, { condition: string }>;
  profiles?: string[];
  volumes?: string[];
}

/** What `docker compose` does to `${NAME:-default}` with NAME unset: the default. */
const interpolated = readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8').replace(
  /\$\{[A-Z_]+:-([^}]*)\}/g,
  '$1',
);
const compose = parse(interpolated, { merge: true }) as {
  services: Record<string, Service>;
};
const s = compose.services;

describe('docker-compose.yml', () => {
  it('has redis, postgres, migrate, api, worker, a k6 service under the load profile and a Redis Cluster stack under the cluster profile', () => {
    expect(Object.keys(s).sort()).toEqual([
      'api',
      'api-cluster',
      'k6',
      'migrate',
      'postgres',
      'redis',
      'redis-cluster-init',
      'redis-node-1',
      'redis-node-2',
      'redis-node-3',
      'worker',
      'worker-cluster',
    ]);
    expect(s.k6!.profiles).toEqual(['load']);
    for (const name of Object.keys(s).filter(
      (n) => n.includes('cluster') || n.startsWith('redis-node'),
    )) {
      expect(s[name]!.profiles, name).toEqual(['cluster']);
    }
    for (const name of ['redis', 'postgres', 'api', 'worker', 'migrate']) {
      expect(s[name]!.profiles).toBeUndefined();
    }
  });

  it('runs redis with AOF and noeviction, with a ping healthcheck', () => {
    const cmd = s.redis!.command!.join(' ');
    expect(cmd).toMatch(/--appendonly yes/);
    expect(cmd).toMatch(/--maxmemory-policy noeviction/);
    expect(s.redis!.healthcheck!.test).toEqual(['CMD', 'redis-cli', 'ping']);
    // a password, which its own healthcheck's redis-cli sends too
    expect(cmd).toMatch(/--requirepass \S+/);
    expect(s.redis!.environment!.REDISCLI_AUTH).toBe(cmd.split('--requirepass ')[1]);
  });

  it('publishes only the APIs, on 127.0.0.1; the stores stay inside the compose network', () => {
    for (const [name, svc] of Object.entries(s)) {
      for (const p of svc.ports ?? []) {
        expect(name, `${name} publishes ${p}`).toMatch(/^api/);
        expect(p).toMatch(/^127\.0\.0\.1:\d+:3000$/);
      }
    }
    expect(s.redis!.ports).toBeUndefined();
    expect(s.postgres!.ports).toBeUndefined();
    const raw = readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8');
    expect(raw).toContain('${REDIS_PASSWORD:-');
    expect(raw).toContain('POSTGRES_PASSWORD: ${POSTGRES_PASSWORD:-');
  });

  it('gives postgres a pg_isready healthcheck for the database the apps use', () => {
    const env = s.postgres!.environment!;
    expect(s.postgres!.healthcheck!.test.join(' ')).toContain(
      `pg_isready -U ${env.POSTGRES_USER} -d ${env.POSTGRES_DB}`,
    );
  });

  it('wires the apps to the redis and postgres services by name, port and credentials', () => {
    const pgEnv = s.postgres!.environment!;
    for (const name of ['api', 'worker', 'migrate']) {
      const env = s[name]!.environment!;
      const redis = new URL(env.REDIS_URL!);
      expect(redis.hostname).toBe('redis');
      expect(redis.port).toBe('6379');
      expect(redis.password).toBe(s.redis!.environment!.REDISCLI_AUTH);
      const db = new URL(env.DATABASE_URL!);
      expect(db.hostname).toBe('postgres');
      expect(db.port).toBe('5432');
      expect(db.username).toBe(pgEnv.POSTGRES_USER);
      expect(db.password).toBe(pgEnv.POSTGRES_PASSWORD);
      expect(db.pathname).toBe(`/${pgEnv.POSTGRES_DB}`);
      expect(s[name]!.build).toBe('.');
    }
  });

  it('starts api and worker only after healthy stores and a finished migration', () => {
    for (const name of ['api', 'worker']) {
      expect(s[name]!.depends_on).toEqual({
        redis: { condition: 'service_healthy' },
        postgres: { condition: 'service_healthy' },
        migrate: { condition: 'service_completed_successfully' },
      });
    }
    expect(s.api!.environment!.HOST).toBe('0.0.0.0');
    expect(s.api!.ports).toContain(`127.0.0.1:3000:${s.api!.environment!.PORT}`);
    expect(s.worker!.healthcheck!.test.join(' ')).toContain('127.0.0.1:3001/readyz');
    expect(s.api!.healthcheck!.test.join(' ')).toContain('/readyz');
  });

  it("forms the cluster profile's nodes into a cluster once, and wires its API and worker to them alone", () => {
    const nodes = ['redis-node-1', 'redis-node-2', 'redis-node-3'];
    for (const n of nodes) {
      const cmd = s[n]!.command!.join(' ');
      expect(cmd).toMatch(/--cluster-enabled yes/);
      expect(cmd).toMatch(/--appendonly yes/);
      expect(cmd).toMatch(/--maxmemory-policy noeviction/);
      // clients get names they can resolve in the compose network, not container IPs
      expect(cmd).toMatch(/--cluster-preferred-endpoint-type hostname/);
    }
    const init = s['redis-cluster-init']!.command!.join(' ');
    expect(init).toContain('cluster_state:ok ||');
    expect(init).toContain(`--cluster create ${nodes.map((n) => `${n}:6379`).join(' ')}`);
    for (const name of ['api-cluster', 'worker-cluster']) {
      const env = s[name]!.environment!;
      expect(env.REDIS_CLUSTER_NODES!.split(',')).toEqual(nodes.map((n) => `${n}:6379`));
      expect(env.REDIS_URL).toBe('');
      expect(env.QUEUE_PREFIX).toMatch(/^\{.+\}$/);
      expect(env.KEY_PREFIX).not.toBe(s.api!.environment!.KEY_PREFIX ?? 'sk');
      expect(s[name]!.depends_on!['redis-cluster-init']).toEqual({
        condition: 'service_completed_successfully',
      });
    }
    expect(s['api-cluster']!.environment!.API_PROCESSES).toBe('2');
    expect(s['api-cluster']!.ports).toContain('127.0.0.1:3001:3000');
  });

  it('points k6 at the api service and a script that exists', () => {
    const k6 = s.k6!;
    expect(new URL(k6.environment!.BASE_URL!).host).toBe(`api:${s.api!.environment!.PORT}`);
    expect(k6.depends_on).toEqual({ api: { condition: 'service_healthy' } });
    expect(k6.volumes).toContain('./load-tests:/scripts');
    expect(k6.environment!.RESULTS_DIR).toBe('/scripts/results');
    const script = k6
      .command!.at(-1)!
      .replace('/scripts/', '')
      .replace(/\$\{K6_SCRIPT:-(.+)\}/, '$1');
    expect(existsSync(join(ROOT, 'load-tests', script))).toBe(true);
  });
});

describe('Dockerfile', () => {
  const file = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
  it('is multi-stage and runs the compiled CLI as a non-root user', () => {
    expect(file.match(/^FROM /gm)).toHaveLength(2);
    expect(file).toMatch(/^USER node$/m);
    expect(file).toContain('ENTRYPOINT ["node", "dist/src/cli.js"]');
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      bin: Record<string, string>;
    };
    expect(pkg.bin.seckill).toBe('dist/src/cli.js');
  });
});
