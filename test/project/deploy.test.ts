/**
 * deploy/: no cluster runs here, so the manifests, alert rules and dashboard are parsed and
 * checked against the product itself: probe paths are real routes on the ports the config sets,
 * selectors and targets line up, the ConfigMap is a valid configuration, and every metric the
 * alerts and the dashboard query is one a running API + worker exports.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { envSchema, loadConfig } from '../../src/config/index.js';
import { openApiDocument } from '../../src/http/openapi/document.js';
import { startApp, type RunningApp } from '../support/app.js';
import { renderKustomization } from '../support/kustomize.js';
import { useNamespace } from '../support/namespace.js';
import { vectorSelectors } from '../../tools/observability/promql.js';

const DEPLOY = join(import.meta.dirname, '..', '..', 'deploy');
const ns = useNamespace();

interface Probe {
  httpGet: { path: string; port: string | number };
}
interface Container {
  args: string[];
  ports: Array<{ name: string; containerPort: number }>;
  readinessProbe: Probe;
  livenessProbe: Probe;
  envFrom: Array<{ configMapRef?: { name: string }; secretRef?: { name: string } }>;
}
type Manifest = {
  kind: string;
  metadata: { name: string };
  spec: any;
  data?: Record<string, string>;
};

// as `kubectl apply -k deploy/kubernetes` would create them
const manifests = renderKustomization(join(DEPLOY, 'kubernetes')) as unknown as Manifest[];
const byKind = (kind: string) => manifests.filter((m) => m.kind === kind);
const configMap = byKind('ConfigMap')[0]!;
const alerts = parse(readFileSync(join(DEPLOY, 'prometheus', 'alerts.yaml'), 'utf8')) as {
  groups: Array<{ rules: Array<Record<string, unknown>> }>;
};
const dashboard = JSON.parse(
  readFileSync(join(DEPLOY, 'grafana', 'seckill-dashboard.json'), 'utf8'),
) as {
  panels: Array<{ title: string; targets: Array<{ expr: string }> }>;
  templating: { list: Array<{ name: string; query?: { query: string }; allValue?: string }> };
};

describe('deploy/kubernetes', () => {
  it('the ConfigMap holds only known variables and is a valid configuration (with the Secret)', () => {
    const known = Object.keys(envSchema.shape);
    expect(Object.keys(configMap.data!).filter((k) => !known.includes(k))).toEqual([]);
    const config = loadConfig({
      ...configMap.data,
      REDIS_URL: 'redis://:pw@redis:6379',
      DATABASE_URL: 'postgres://seckill:pw@postgres:5432/seckill',
      JWT_SECRET: 'x'.repeat(32),
      ADMIN_TOKEN: 'y'.repeat(16),
    });
    expect(config.http.drainMs).toBeGreaterThan(0);
  });

  it('probes hit real routes on the ports the config gives the API and the worker', () => {
    const paths = Object.keys(openApiDocument().paths as object);
    const ports = { serve: configMap.data!.PORT, worker: configMap.data!.WORKER_PORT };
    const deployments = byKind('Deployment');
    expect(deployments.map((d) => d.metadata.name).sort()).toEqual([
      'seckill-api',
      'seckill-worker',
    ]);
    for (const d of deployments) {
      const c = d.spec.template.spec.containers[0] as Container;
      const command = c.args[0] as 'serve' | 'worker';
      expect(['serve', 'worker']).toContain(command);
      for (const probe of [c.readinessProbe, c.livenessProbe]) {
        expect(paths).toContain(probe.httpGet.path);
        const port = c.ports.find((p) => p.name === probe.httpGet.port);
        expect(port, `${d.metadata.name}: port ${probe.httpGet.port}`).toBeDefined();
        expect(String(port!.containerPort)).toBe(ports[command]);
      }
      expect(c.readinessProbe.httpGet.path).toBe('/readyz');
      expect(c.livenessProbe.httpGet.path).toBe('/healthz');
      expect(c.envFrom.map((e) => e.configMapRef?.name ?? e.secretRef?.name)).toEqual([
        'seckill',
        'seckill',
      ]);
      // a stopping pod has its drain and shutdown inside the grace period
      const grace = d.spec.template.spec.terminationGracePeriodSeconds * 1_000;
      expect(grace).toBeGreaterThan(Number(configMap.data!.SHUTDOWN_TIMEOUT_MS));
    }
    expect(byKind('Job')[0]!.spec.template.spec.containers[0].args).toEqual(['migrate']);
  });

  it('Service, PodDisruptionBudgets and the HPA select and target the Deployments that exist', () => {
    const labelsOf = (name: string) =>
      byKind('Deployment').find((d) => d.metadata.name === name)!.spec.template.metadata.labels;
    const matches = (selector: Record<string, string>, labels: Record<string, string>) =>
      Object.entries(selector).every(([k, v]) => labels[k] === v);
    const service = byKind('Service')[0]!;
    expect(matches(service.spec.selector, labelsOf('seckill-api'))).toBe(true);
    const apiPorts =
      labelsOf('seckill-api') && byKind('Deployment')[0]!.spec.template.spec.containers[0].ports;
    expect(apiPorts.map((p: { name: string }) => p.name)).toContain(
      service.spec.ports[0].targetPort,
    );
    const pdbs = byKind('PodDisruptionBudget');
    expect(pdbs).toHaveLength(2);
    for (const pdb of pdbs) {
      expect(matches(pdb.spec.selector.matchLabels, labelsOf(pdb.metadata.name))).toBe(true);
    }
    const hpa = byKind('HorizontalPodAutoscaler')[0]!;
    expect(hpa.spec.scaleTargetRef).toMatchObject({ kind: 'Deployment', name: 'seckill-api' });
    expect(hpa.spec.metrics[0].resource.name).toBe('cpu');
  });
});

describe('deploy/prometheus and deploy/grafana', () => {
  let app: RunningApp;
  let exported: Set<string>;
  let metricsText: string;
  beforeAll(async () => {
    app = await startApp(ns.config(), { worker: true });
    // one purchase attempt, so the per-request series exist
    await fetch(`${app.url}/seckill`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-user-id': 'deploy-test' },
      body: JSON.stringify({ productId: 'no-such-product' }),
    });
    const text = (metricsText = await (await fetch(`${app.url}/metrics`)).text());
    exported = new Set(
      text
        .split('\n')
        .filter((l) => l && !l.startsWith('#'))
        .map((l) => l.split(/[{ ]/)[0]!),
    );
    for (const l of text.split('\n').filter((x) => x.startsWith('# TYPE '))) {
      exported.add(l.split(' ')[2]!); // metrics with no series yet (no label values seen)
    }
  });
  afterAll(async () => {
    await app?.close();
  });

  const metricsIn = (expr: string) =>
    [...expr.matchAll(/\b((?:seckill|http|lock)_[a-z_]+)\b/g)].map((m) => m[1]!);

  it('every alert is complete, and queries metrics the product exports', () => {
    const rules = alerts.groups.flatMap((g) => g.rules);
    expect(rules.map((r) => r.alert)).toEqual(
      expect.arrayContaining([
        'SeckillStoreUnavailable',
        'SeckillNotReady',
        'SeckillTargetDown',
        'SeckillJobDown',
        'SeckillLockLost',
        'SeckillOrderJobsFailing',
        'SeckillHigh5xxRate',
        'SeckillOutboxLag',
        'SeckillQueueDepth',
        'SeckillLockTimeouts',
      ]),
    );
    for (const r of rules) {
      expect(r.expr, String(r.alert)).toBeTruthy();
      expect((r.labels as { severity?: string }).severity).toMatch(/^(critical|warning)$/);
      expect((r.annotations as { summary?: string }).summary).toBeTruthy();
      const used = metricsIn(String(r.expr));
      if (!/\bup\b/.test(String(r.expr))) {
        expect(used.length, String(r.alert)).toBeGreaterThan(0);
      }
      for (const m of used) expect(exported, `${String(r.alert)} uses ${m}`).toContain(m);
    }
  });

  it('every dashboard panel queries metrics the product exports', () => {
    const exprs = dashboard.panels.flatMap((p) => p.targets.map((t) => t.expr));
    expect(exprs.length).toBeGreaterThanOrEqual(6);
    for (const e of exprs) {
      const used = metricsIn(e);
      expect(used.length, e).toBeGreaterThan(0);
      for (const m of used) expect(exported, `${e} uses ${m}`).toContain(m);
    }
  });

  it('every panel selects this service by $job, $namespace, $instance (and $product) on a shared Prometheus', () => {
    const vars = Object.fromEntries(dashboard.templating.list.map((v) => [v.name, v]));
    expect(Object.keys(vars)).toEqual(['datasource', 'job', 'namespace', 'instance', 'product']);
    // the job list is the jobs exporting this service's own gauge, and "All" means those jobs
    // (no allValue: Grafana sends (a|b)), never `.*`, which would take in every other job
    expect(vars.job!.query!.query).toBe('label_values(seckill_ready, job)');
    expect(vars.job!.allValue).toBeUndefined();
    const perProduct = ['seckill_stock_remaining', 'seckill_outbox_backlog'];
    const unselected = dashboard.panels.flatMap((p) =>
      p.targets.flatMap((t) =>
        vectorSelectors(t.expr)
          .filter(
            (s) =>
              !s.matchers.includes('job=~"$job",namespace=~"$namespace",instance=~"$instance"') ||
              (perProduct.includes(s.metric) && !s.matchers.includes('product=~"$product"')),
          )
          .map((s) => `${p.title}: ${s.metric}{${s.matchers}}`),
      ),
    );
    expect(unselected).toEqual([]);
    expect(dashboard.panels.map((p) => p.title)).toEqual(
      expect.arrayContaining(['Processes ready', 'Redis memory used (of maxmemory)']),
    );
  });

  it('the route and result labels the queries filter on are ones the product uses', () => {
    const queries = [
      readFileSync(join(DEPLOY, 'prometheus', 'alerts.yaml'), 'utf8'),
      ...dashboard.panels.flatMap((p) => p.targets.map((t) => t.expr)),
    ].join('\n');
    for (const m of queries.matchAll(/route="([^"]+)"/g)) {
      expect(metricsText).toContain(`route="${m[1]}"`);
    }
    const codes = readFileSync(
      join(import.meta.dirname, '..', '..', 'src', 'inventory', 'errors.ts'),
      'utf8',
    );
    for (const m of queries.matchAll(/result="([^"]+)"/g)) expect(codes).toContain(`'${m[1]}'`);
  });
});
