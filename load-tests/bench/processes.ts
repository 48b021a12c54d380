/** Child processes of a benchmark run (the API, the worker, baselines) and waiting for them. */
import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { progress } from './report.js';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** `node <args>` from the repository root, its output shown; a crash is reported. */
export function child(args: string[], env: NodeJS.ProcessEnv, label: string): ChildProcess {
  const c = spawn(process.execPath, args, {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  c.once('exit', (code, signal) => {
    if (code !== 0 && signal !== 'SIGTERM') progress(`${label} exited (${code ?? signal})`);
  });
  return c;
}

/** The built CLI (`npm run build` first): the API and worker run as they do in production. */
export const cli = (...args: string[]) => [join(ROOT, 'dist', 'src', 'cli.js'), ...args];

export async function stopAll(children: Array<ChildProcess | undefined>): Promise<void> {
  const live = children.filter((c): c is ChildProcess => c !== undefined);
  for (const c of live) c.kill('SIGTERM');
  await Promise.all(
    live.map((c) => new Promise((r) => (c.exitCode !== null ? r(null) : c.once('exit', r)))),
  );
}

export async function until(what: string, probe: () => Promise<boolean>, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
