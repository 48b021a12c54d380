/**
 * The Grafana dashboards of deploy/grafana as Grafana runs them: each panel's queries with the
 * template variables ($job, $namespace, $instance, $product) replaced by what Grafana sends for
 * "All", the variables' own label_values queries answered by the Prometheus under test (so the
 * job list is checked too: it must hold seckill's jobs and not another service's).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RunningPrometheus } from './prometheus.js';

export interface Panel {
  title: string;
  /** the query as Grafana sends it (variables replaced) */
  expr: string;
}

export interface Variable {
  name: string;
  type: string;
  query?: { query: string } | string;
  includeAll?: boolean;
  allValue?: string;
}

interface Dashboard {
  templating?: { list: Variable[] };
  panels: Array<{ title: string; targets: Array<{ expr: string }> }>;
}

function dashboards(dir: string): Dashboard[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')) as Dashboard);
}

/** `$name` and `${name}` replaced by `values[name]` (a name without a value is left as is). */
export function interpolate(text: string, values: Record<string, string>): string {
  return text.replace(/\$\{(\w+)\}|\$(\w+)/g, (all, braced?: string, bare?: string) => {
    const v = values[(braced ?? bare)!];
    return v ?? all;
  });
}

const escapeRegex = (s: string) => s.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&');

/**
 * Each query variable's "All", in order (a later query may use an earlier variable): its allValue
 * when it has one, else every value of its label_values query joined as Grafana does for
 * Prometheus, `(a|b)`.
 */
export async function resolveVariables(
  prom: RunningPrometheus,
  variables: Variable[],
): Promise<Record<string, string>> {
  const values: Record<string, string> = {};
  for (const v of variables.filter((x) => x.type === 'query')) {
    const query = typeof v.query === 'string' ? v.query : v.query?.query;
    const m = /^label_values\((.+),\s*(\w+)\)$/.exec(query?.trim() ?? '');
    if (!m) throw new Error(`variable ${v.name}: not a label_values query: ${query}`);
    const found = await prom.labelValues(interpolate(m[1]!, values), m[2]!);
    if (v.allValue !== undefined) values[v.name] = v.allValue;
    else if (found.length === 0) throw new Error(`variable ${v.name}: ${query} found no values`);
    else values[v.name] = `(${found.map(escapeRegex).join('|')})`;
    values[`${v.name}:found`] = found.join(',');
  }
  return values;
}

/** The dashboards' variables (every dashboard's, in file order). */
export function loadVariables(dir: string): Variable[] {
  return dashboards(dir).flatMap((d) => d.templating?.list ?? []);
}

/** Every panel query, variables replaced by `values`. */
export function loadPanels(dir: string, values: Record<string, string> = {}): Panel[] {
  return dashboards(dir).flatMap((d) =>
    d.panels.flatMap((p) =>
      p.targets.map((t) => ({ title: p.title, expr: interpolate(t.expr, values) })),
    ),
  );
}
