import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '..', '..');

export interface CliRun {
  child: ChildProcess;
  /** Everything written to stdout and stderr so far. */
  output(): string;
  /** What was written to stderr alone (messages to the operator). */
  stderr(): string;
  /** What was written to stdout alone (logs, command results). */
  stdout(): string;
  exited: Promise<number | null>;
}

/**
 * Runs `seckill <args>` from source (tsx) in a child process with exactly `env` (plus HOME), so
 * a test controls every variable the CLI reads.
 */
export function runCli(
  args: string[],
  env: Record<string, string>,
  opts: { nodeArgs?: string[] } = {},
): CliRun {
  const script = [...(opts.nodeArgs ?? []), '--import', 'tsx', join(ROOT, 'src', 'cli.ts')];
  const child = spawn(process.execPath, [...script, ...args], {
    cwd: ROOT,
    env: { HOME: process.env.HOME ?? '/root', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => ((out += d), (stdout += d)));
  child.stderr!.on('data', (d) => ((out += d), (stderr += d)));
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => resolve(code)),
  );
  return { child, output: () => out, stderr: () => stderr, stdout: () => stdout, exited };
}

/**
 * A retry loop's deadline: call the check it returns (by convention `overdue`) each time round;
 * past `timeoutMs` it throws, naming what the loop waited for (npm run structure's
 * testLoopsWithoutDeadline looks for that call).
 * @param what - named in the error; a function is read at timeout (e.g. the last answer).
 */
export function deadlineOf(what: string | (() => string), timeoutMs: number): () => void {
  const deadline = Date.now() + timeoutMs;
  return () => {
    if (Date.now() > deadline)
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${typeof what === 'function' ? what() : what}`,
      );
  };
}

/**
 * Polls `probe` until it returns something truthy.
 * @param what - named in the timeout error; a function is read at timeout (e.g. output so far).
 */
export async function waitFor<T>(
  what: string | (() => string),
  probe: () => Promise<T | undefined | false>,
  timeoutMs: number,
  intervalMs = 200,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe().catch(() => undefined);
    if (v) return v;
    if (Date.now() > deadline)
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${typeof what === 'function' ? what() : what}`,
      );
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
