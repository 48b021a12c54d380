/**
 * Benchmark output: a readable table, then exactly one JSON line with the figures, so runs can be
 * compared by tools. Also percentiles and a description of the machine.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const RESULTS = join(dirname(fileURLToPath(import.meta.url)), '..', 'results');

/**
 * Keeps a run's printed text: as `results/<name>.md` (the committed report) when `update`, else
 * under `results/raw/<run>/` (git-ignored), so a routine run does not overwrite the report.
 * @returns the file written.
 */
export function saveRun(name: string, text: string, update: boolean): string {
  const file = update
    ? join(RESULTS, `${name}.md`)
    : join(RESULTS, 'raw', Date.now().toString(36), `${name}.md`);
  mkdirSync(dirname(file), { recursive: true });
  const when = new Date().toISOString().slice(0, 10);
  writeFileSync(file, `# ${name}\n\nRun on ${when}.\n\n\`\`\`\n${text.trim()}\n\`\`\`\n`);
  progress(`written to ${file}`);
  return file;
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}

export function table(rows: Array<Record<string, string | number>>): string {
  if (rows.length === 0) return '';
  const cols = Object.keys(rows[0]!);
  const cell = (v: string | number | undefined) =>
    typeof v === 'number' ? (Number.isInteger(v) ? String(v) : v.toFixed(2)) : (v ?? '');
  const width = cols.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)));
  const line = (vals: string[]) => vals.map((v, i) => v.padStart(width[i]!)).join('  ');
  return [
    line(cols),
    line(width.map((w) => '-'.repeat(w))),
    ...rows.map((r) => line(cols.map((c) => cell(r[c])))),
  ].join('\n');
}

export function machine(): {
  cpus: number;
  model: string;
  memGiB: number;
  node: string;
  /** load average over the last minute when asked: how much else ran on these cores */
  load1: number;
} {
  return {
    cpus: cpus().length,
    model: cpus()[0]?.model ?? 'unknown',
    memGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    load1: Math.round(loadavg()[0]! * 10) / 10,
  };
}

export const ratio = (a: number, b: number) => (b === 0 ? 0 : Math.round((a / b) * 100) / 100);

export function progress(line: string): void {
  process.stderr.write(`[bench] ${line}\n`);
}

/**
 * The scenarios `--only` names (all of them without it). An unknown name ends the run with exit 2
 * and the list of names: a typo must not run nothing and print empty ratios.
 */
export function pickScenarios<S extends { name: string }>(
  all: S[],
  only: string[] | undefined,
): S[] {
  if (!only) return all;
  const unknown = only.filter((name) => !all.some((s) => s.name === name));
  if (unknown.length) {
    process.stderr.write(
      `bench: no scenario ${unknown.map((u) => `"${u}"`).join(', ')}; --only takes these names:\n` +
        `${all.map((s) => `  ${s.name}`).join('\n')}\n`,
    );
    process.exit(2);
  }
  return all.filter((s) => only.includes(s.name));
}
