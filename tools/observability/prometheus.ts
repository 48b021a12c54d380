/**
 * A real Prometheus (Debian's `prometheus` package) for the observability checks: scrapes the
 * jobs `seckill-api` and `seckill-worker` (and `storefront`, another service with the same generic
 * metric names, as a shared Prometheus has) from file_sd target lists (rewritten to add or remove
 * targets), every second, and evaluates the given rule files every second. Queries and alerts go
 * through its HTTP API.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { openSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../../src/launcher/process.js';
import { waitFor } from './wait.js';

export type Job = 'seckill-api' | 'seckill-worker' | 'storefront';

export interface Sample {
  labels: Record<string, string>;
  value: number;
}

export interface ActiveAlert {
  labels: Record<string, string>;
  state: 'pending' | 'firing';
}

export interface RunningPrometheus {
  url: string;
  /** Replaces a job's targets (host:port); Prometheus rereads the file within a second or so. */
  setTargets(job: Job, targets: string[]): void;
  /** An instant query: the vector's samples (a scalar answer is one sample without labels). */
  query(expr: string): Promise<Sample[]>;
  /** The values of `label` over the series `selector` selects (Grafana's label_values). */
  labelValues(selector: string, label: string): Promise<string[]>;
  alerts(): Promise<ActiveAlert[]>;
  stop(): Promise<void>;
}

/** `prometheus` and `promtool`, or an error that says how to get them. */
export function prometheusBinary(name: 'prometheus' | 'promtool' = 'prometheus'): string {
  const found = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' });
  const path = found.stdout.trim();
  if (found.status !== 0 || !path) {
    throw new Error(
      `${name} not found: apt-get install -y --no-install-recommends prometheus (Debian), ` +
        'or put a Prometheus 2.x release on PATH',
    );
  }
  return path;
}

export async function startPrometheus(o: {
  dir: string;
  ruleFiles: string[];
  targets: Partial<Record<Job, string[]>>;
}): Promise<RunningPrometheus> {
  const targetsFile = (job: Job) => join(o.dir, `${job}.json`);
  const setTargets = (job: Job, targets: string[]) => {
    // written whole, then renamed: Prometheus never reads half a file
    const tmp = `${targetsFile(job)}.tmp`;
    writeFileSync(tmp, JSON.stringify([{ targets }]));
    renameSync(tmp, targetsFile(job));
  };
  const jobs = Object.keys(o.targets) as Job[];
  for (const job of jobs) setTargets(job, o.targets[job]!);
  const scrape = (job: Job) =>
    `  - job_name: ${job}\n    file_sd_configs: [{ files: ['${targetsFile(job)}'], refresh_interval: 1s }]\n`;
  const config = join(o.dir, 'prometheus.yml');
  writeFileSync(
    config,
    'global: { scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s }\n' +
      `rule_files: [${o.ruleFiles.map((f) => `'${f}'`).join(', ')}]\n` +
      'scrape_configs:\n' +
      jobs.map(scrape).join(''),
  );
  const port = await freePort();
  const log = openSync(join(o.dir, 'prometheus.log'), 'a');
  const child: ChildProcess = spawn(
    prometheusBinary(),
    [
      `--config.file=${config}`,
      `--storage.tsdb.path=${join(o.dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--storage.tsdb.retention.time=1h',
    ],
    { stdio: ['ignore', log, log] },
  );
  const url = `http://127.0.0.1:${port}`;
  let exited = false;
  child.once('exit', () => (exited = true));
  await waitFor(
    `Prometheus ready on ${url} (log: ${join(o.dir, 'prometheus.log')})`,
    async () => {
      if (exited) throw new Error('prometheus exited');
      return (await fetch(`${url}/-/ready`)).ok;
    },
    60_000,
  );
  const api = async (path: string) => {
    const res = await fetch(`${url}${path}`);
    const body = (await res.json()) as { status: string; data: unknown; error?: string };
    if (body.status !== 'success') throw new Error(`Prometheus ${path}: ${body.error}`);
    return body.data;
  };
  return {
    url,
    setTargets,
    async query(expr) {
      const data = (await api(`/api/v1/query?query=${encodeURIComponent(expr)}`)) as {
        resultType: string;
        result: unknown;
      };
      if (data.resultType === 'scalar') {
        return [{ labels: {}, value: Number((data.result as [number, string])[1]) }];
      }
      return (
        data.result as Array<{ metric: Record<string, string>; value: [number, string] }>
      ).map((r) => ({ labels: r.metric, value: Number(r.value[1]) }));
    },
    async labelValues(selector, label) {
      const q = `match[]=${encodeURIComponent(selector)}`;
      return (await api(`/api/v1/label/${encodeURIComponent(label)}/values?${q}`)) as string[];
    },
    async alerts() {
      return ((await api('/api/v1/alerts')) as { alerts: ActiveAlert[] }).alerts;
    },
    async stop() {
      if (exited) return;
      const gone = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await gone;
      clearTimeout(timer);
    },
  };
}
