/**
 * The alert rules as promtool sees them (Debian's `prometheus` package, installed by .ci/run):
 * `promtool check rules`, and `promtool test rules` on deploy/prometheus/alerts.test.yaml (series
 * written to fire each alert and to keep it quiet just below its condition). Plus what promtool
 * does not check: every alert carries a severity, summary, description and an absolute
 * runbook_url (one page, set once in the monitoring kustomization) whose section exists in
 * docs/operations.md; every selector names this service's jobs (a shared Prometheus holds other
 * services' http_requests_total, lock_lost_total, ...); the PrometheusRule ships the same groups;
 * and the scrape config names the jobs the rules select on.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { prometheusBinary } from '../../tools/observability/prometheus.js';
import { vectorSelectors } from '../../tools/observability/promql.js';
import { renderKustomization } from '../support/kustomize.js';

const ROOT = join(import.meta.dirname, '..', '..');
const PROM = join(ROOT, 'deploy', 'prometheus');
const read = (...p: string[]) => readFileSync(join(ROOT, ...p), 'utf8');

interface Rule {
  alert: string;
  expr: string;
  for?: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}
const alerts = parse(read('deploy', 'prometheus', 'alerts.yaml')) as {
  groups: Array<{ name: string; rules: Rule[] }>;
};
const rules = alerts.groups.flatMap((g) => g.rules);

function promtool(...args: string[]) {
  const r = spawnSync(prometheusBinary('promtool'), args, { cwd: PROM, encoding: 'utf8' });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

/** GitHub's anchor of a markdown heading. */
const anchor = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\w\- ]/g, '')
    .replace(/ /g, '-');

/** Where the shipped rules link (docs/operations.md, published); operators set their own. */
const RUNBOOK_PAGE = 'https://runbooks.example.com/seckill/operations.md';

/** This service's jobs, as the scrape config and the monitors name them. */
const JOBS = /\bjob(=~"seckill-api\|seckill-worker"|="seckill-api"|="seckill-worker")/;

describe('deploy/prometheus/alerts.yaml', () => {
  it("every selector of every rule names this service's jobs (a shared Prometheus holds others)", () => {
    const unselected = rules.flatMap((r) =>
      vectorSelectors(r.expr)
        .filter((s) => !JOBS.test(s.matchers))
        .map((s) => `${r.alert}: ${s.metric}{${s.matchers}}`),
    );
    expect(unselected).toEqual([]);
    // the finder sees what it must: a bare name and one in a call are both caught
    expect(vectorSelectors('sum(rate(http_requests_total[1m])) / on (x) lock_lost_total')).toEqual([
      { metric: 'http_requests_total', matchers: '' },
      { metric: 'lock_lost_total', matchers: '' },
    ]);
  });

  it('the monitoring kustomization sets every runbook link from one annotation', () => {
    const dir = mkdtempSync(join(tmpdir(), 'runbooks-'));
    try {
      cpSync(join(ROOT, 'deploy', 'kubernetes', 'monitoring'), dir, { recursive: true });
      const file = join(dir, 'prometheus-rule.yaml');
      const page = 'https://wiki.acme.test/ops/seckill';
      writeFileSync(
        file,
        readFileSync(file, 'utf8').replace(
          `seckill-runbook-page: ${RUNBOOK_PAGE}`,
          `seckill-runbook-page: ${page}`,
        ),
      );
      const [rule] = renderKustomization(dir).filter((o) => o.kind === 'PrometheusRule');
      const links = (rule!.spec.groups as Array<{ rules: Rule[] }>)
        .flatMap((g) => g.rules)
        .map((r) => r.annotations.runbook_url);
      expect(links).toEqual(rules.map((r) => `${page}#${r.alert.toLowerCase()}`));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('promtool check rules accepts it', () => {
    const r = promtool('check', 'rules', 'alerts.yaml');
    expect(r.out).toContain(`SUCCESS: ${rules.length} rules found`);
    expect(r.code).toBe(0);
  });

  it('promtool test rules: each alert fires on its condition and not just below it', () => {
    const r = promtool('test', 'rules', 'alerts.test.yaml');
    expect(r.out, r.out).toContain('SUCCESS');
    expect(r.code).toBe(0);
    // every alert has a unit test in which it fires
    const tests = parse(read('deploy', 'prometheus', 'alerts.test.yaml')) as {
      tests: Array<{ alert_rule_test: Array<{ alertname: string; exp_alerts: unknown[] }> }>;
    };
    const fired = new Set(
      tests.tests
        .flatMap((t) => t.alert_rule_test)
        .filter((a) => a.exp_alerts.length > 0)
        .map((a) => a.alertname),
    );
    expect(rules.map((r) => r.alert).filter((a) => !fired.has(a))).toEqual([]);
  });

  it('every alert says how bad, what and what to do, and links its runbook section', () => {
    const headings = [...read('docs', 'operations.md').matchAll(/^#{2,4} (.+)$/gm)].map((m) =>
      anchor(m[1]!),
    );
    for (const r of rules) {
      expect(r.labels.severity, r.alert).toMatch(/^(critical|warning)$/);
      expect(r.annotations.summary, r.alert).toBeTruthy();
      expect(r.annotations.description, r.alert).toBeTruthy();
      // Alertmanager (and a pager) opens it as is: a relative path opens nothing
      const url = new URL(r.annotations.runbook_url!);
      expect(url.protocol, r.alert).toBe('https:');
      const [page, section] = r.annotations.runbook_url!.split('#');
      expect(page, r.alert).toBe(RUNBOOK_PAGE);
      expect(headings, `${r.alert}: runbook section #${section}`).toContain(section);
      expect(section).toBe(r.alert.toLowerCase());
    }
    // the alert table lists every alert with its severity and `for:`
    const table = read('docs', 'operations.md');
    for (const r of rules) {
      expect(table).toMatch(
        new RegExp(`\\| ${r.alert} +\\| ${r.labels.severity} +\\|.*\\| ${r.for ?? '0s'} +\\|`),
      );
    }
  });

  it('a one-minute sale can fire every alert: no `for:` over a minute', () => {
    const seconds = (d: string) => Number(d.slice(0, -1)) * (d.endsWith('m') ? 60 : 1);
    for (const r of rules) expect(seconds(r.for ?? '0s'), r.alert).toBeLessThanOrEqual(60);
  });

  it('the PrometheusRule ships exactly these groups', () => {
    const pr = parse(read('deploy', 'kubernetes', 'monitoring', 'prometheus-rule.yaml')) as {
      kind: string;
      spec: { groups: unknown };
    };
    expect(pr.kind).toBe('PrometheusRule');
    expect(pr.spec.groups).toEqual(alerts.groups);
  });

  it('the scrape config, ServiceMonitor and PodMonitor name the jobs the rules select on', () => {
    const jobs = [...read('deploy', 'prometheus', 'alerts.yaml').matchAll(/job[=~]+"([^"]+)"/g)]
      .flatMap((m) => m[1]!.split('|'))
      .sort();
    expect([...new Set(jobs)]).toEqual(['seckill-api', 'seckill-worker']);
    const scrape = parse(read('deploy', 'prometheus', 'scrape-config.yaml')) as {
      scrape_configs: Array<{
        job_name: string;
        relabel_configs: Array<{ regex?: string; action?: string; source_labels?: string[] }>;
      }>;
    };
    expect(scrape.scrape_configs.map((s) => s.job_name)).toEqual(['seckill-api', 'seckill-worker']);
    for (const s of scrape.scrape_configs) {
      const component = s.job_name.replace('seckill-', '');
      expect(s.relabel_configs[0]).toMatchObject({ action: 'keep', regex: `seckill;${component}` });
    }
    const monitors = ['service-monitor.yaml', 'pod-monitor.yaml'].map((f) =>
      read('deploy', 'kubernetes', 'monitoring', f),
    );
    expect(monitors[0]).toContain('replacement: seckill-api');
    expect(monitors[1]).toContain('replacement: seckill-worker');
  });
});
