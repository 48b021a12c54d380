/**
 * Supervision of the server processes the launcher starts: each runs in its own process group
 * (so a terminal's Ctrl-C reaches only the launcher, which then stops them in reverse order),
 * logs to a file in the data folder, and is stopped with its graceful signal, then SIGKILL.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';

export interface ServiceProcess {
  readonly name: string;
  readonly pid: number;
  readonly logFile: string;
  /** Resolves with the exit code (or signal name) when the process ends. */
  readonly exited: Promise<number | string>;
  /** True once stop() was called; an exit before that is a crash. */
  readonly stopping: boolean;
  stop(): Promise<void>;
  /** SIGKILL now (forced exit only). */
  /** SIGKILL; settles once the process is gone (reaped by us: no zombie left behind) */
  kill(): Promise<unknown>;
}

export interface SpawnServiceOptions {
  name: string;
  command: string;
  args: string[];
  logFile: string;
  /** Signal that asks for a clean shutdown (redis: SIGTERM, postgres fast shutdown: SIGINT). */
  stopSignal: NodeJS.Signals;
  stopTimeoutMs?: number;
  uid?: number;
  gid?: number;
}

export function spawnService(opts: SpawnServiceOptions): ServiceProcess {
  const fd = openSync(opts.logFile, 'a');
  let child: ChildProcess;
  try {
    child = spawn(opts.command, opts.args, {
      detached: true,
      stdio: ['ignore', fd, fd],
      ...(opts.uid !== undefined && { uid: opts.uid, gid: opts.gid }),
    });
  } finally {
    closeSync(fd);
  }
  const exited = new Promise<number | string>((resolve) => {
    child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown'));
    child.once('error', (err) => resolve(err.message));
  });
  let stopping = false;
  let stopped: Promise<void> | undefined;
  return {
    name: opts.name,
    pid: child.pid ?? -1,
    logFile: opts.logFile,
    exited,
    get stopping() {
      return stopping;
    },
    stop() {
      stopping = true;
      stopped ??= (async () => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        child.kill(opts.stopSignal);
        const timeout = opts.stopTimeoutMs ?? 15_000;
        let timer: NodeJS.Timeout | undefined;
        const forced = new Promise<'timeout'>(
          (r) => (timer = setTimeout(() => r('timeout'), timeout)),
        );
        const outcome = await Promise.race([exited, forced]);
        clearTimeout(timer);
        if (outcome === 'timeout') {
          child.kill('SIGKILL');
          await exited;
        }
      })();
      return stopped;
    },
    kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      return exited;
    },
  };
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A process's command line ('' when it is gone, or there is no /proc to read it from). */
export function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return '';
  }
}

/** The pid on the first line of a pid file; undefined without a file or a plausible pid. */
export function pidFromFile(file: string): number | undefined {
  if (!existsSync(file)) return undefined;
  const pid = Number(readFileSync(file, 'utf8').split('\n')[0]?.trim());
  return Number.isInteger(pid) && pid > 1 ? pid : undefined;
}

/**
 * Stops a server left running by a launcher that was killed (SIGKILL gives it no chance to clean
 * up). Only a live process whose command line names `binary` is touched: pids get reused.
 * @returns the pid that was stopped, if any.
 */
export async function stopStale(
  pidFile: string,
  binary: string,
  signal: NodeJS.Signals,
  timeoutMs = 15_000,
): Promise<number | undefined> {
  const pid = pidFromFile(pidFile);
  if (pid === undefined || !isAlive(pid)) return undefined;
  if (!commandLine(pid).includes(binary)) return undefined;
  process.kill(pid, signal);
  const deadline = Date.now() + timeoutMs;
  while (isAlive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  if (isAlive(pid)) process.kill(pid, 'SIGKILL');
  return pid;
}

/** Last lines of a log file, to explain why a server did not come up. */
export function tail(file: string, lines = 15): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/** A server the launcher cannot start, for a reason the user can act on (no stack needed). */
export class LaunchError extends Error {
  override name = 'LaunchError';
}

/** Something else already listens on a port the launcher needs. */
export class PortBusyError extends LaunchError {
  constructor(readonly port: number) {
    super(`port ${port} is already in use: stop what runs there or pick another port`);
  }
}

/**
 * Rejects when something already listens on `host`:`port` (default 127.0.0.1: so we never adopt
 * a stranger).
 */
export function assertPortFree(port: number, host = '127.0.0.1'): Promise<void> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'EADDRINUSE'
          ? new PortBusyError(port)
          : new LaunchError(`cannot bind port ${port}: ${err.message}`),
      ),
    );
    probe.listen(port, host, () => probe.close(() => resolve()));
  });
}

/** A port the kernel just handed out and we released; good enough for throwaway servers. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const addr = s.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      s.close(() => resolve(port));
    });
  });
}

/** Linux's first ephemeral port (net.ipv4.ip_local_port_range): outgoing connections bind above. */
const EPHEMERAL_FIRST = 32_768;

/**
 * The first of `count` consecutive free ports (a local cluster's nodes and bus ports), below the
 * ephemeral range: a port found free there can be taken by any outgoing connection before the
 * node binds it (a full test run lost a cluster's start to its bus port so).
 */
export async function freePortRange(count: number, attempts = 50): Promise<number> {
  for (let i = 0; i < attempts; i++) {
    const base = 10_000 + Math.floor(Math.random() * (EPHEMERAL_FIRST - 10_000 - count));
    let free = true;
    for (let p = base; p < base + count && free; p++) {
      free = await assertPortFree(p).then(
        () => true,
        () => false,
      );
    }
    if (free) return base;
  }
  throw new Error(`no ${count} consecutive free ports found`);
}
