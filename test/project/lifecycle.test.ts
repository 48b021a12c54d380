/**
 * Shutdown order, and a shutdown that begins while a server is still starting (Ctrl-C, or a
 * closed output pipe, during `seckill up`'s start-up): what that start adds is closed too.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { spawnService, isAlive } from '../../src/launcher/process.js';
import { Lifecycle } from '../../src/lifecycle.js';
import { tempDir } from '../support/servers.js';
import { deadlineOf } from '../support/cli.js';

const quiet = pino({ level: 'silent' });

/** A promise and the function that settles it. */
function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe('Lifecycle', () => {
  it('closes newest first, each once, and a second close waits for the first', async () => {
    const lifecycle = new Lifecycle(quiet);
    const closed: string[] = [];
    for (const name of ['lock', 'redis', 'postgres', 'api'])
      lifecycle.add(name, () => void closed.push(name));
    const [a, b] = [lifecycle.close(), lifecycle.close()];
    await Promise.all([a, b]);
    expect(closed).toEqual(['api', 'postgres', 'redis', 'lock']);
    await lifecycle.close();
    expect(closed).toHaveLength(4);
  });

  it('a start in flight when shutdown begins is awaited, and what it added is closed before close resolves', async () => {
    const lifecycle = new Lifecycle(quiet);
    const closed: string[] = [];
    lifecycle.add('lock', () => void closed.push('lock'));
    const pgStarted = deferred();
    const start = lifecycle.starting(
      (async () => {
        lifecycle.add('redis', () => void closed.push('redis'));
        await pgStarted.promise; // PostgreSQL still starting when the signal comes
        lifecycle.add('postgres', () => void closed.push('postgres'));
      })(),
    );
    let done = false;
    const closing = lifecycle.close().then(() => (done = true));
    // the scenario: time for close to resolve if it wrongly would
    await new Promise((r) => setTimeout(r, 50));
    // what had started is closed at once; close has not resolved: PostgreSQL is on its way up
    expect(closed).toEqual(['redis', 'lock']);
    expect(done).toBe(false);
    pgStarted.resolve();
    await start;
    await closing;
    expect(closed).toEqual(['redis', 'lock', 'postgres']);
  });

  it('a child server whose stop outlasts its step is killed and reaped before close resolves', async () => {
    const dir = tempDir('lifecycle-reap');
    try {
      const lifecycle = new Lifecycle(quiet);
      // ignores SIGTERM (its stop signal): its stop would take the full 60 s
      const child = spawnService({
        name: 'stubborn',
        command: process.execPath,
        args: [
          '-e',
          "process.on('SIGTERM', () => {}); console.log('ready'); setTimeout(() => {}, 60_000)",
        ],
        logFile: join(dir.path, 'stubborn.log'),
        stopSignal: 'SIGTERM',
        stopTimeoutMs: 60_000,
      });
      const log = join(dir.path, 'stubborn.log');
      const overdue = deadlineOf('the stubborn child to log ready', 20_000);
      while (!(existsSync(log) && readFileSync(log, 'utf8').includes('ready'))) {
        overdue();
        await new Promise((r) => setTimeout(r, 20));
      }
      lifecycle.add(
        'stubborn',
        () => child.stop(),
        () => child.kill(),
        200,
      );
      await lifecycle.close();
      // reaped by us: not even a zombie
      expect(isAlive(child.pid)).toBe(false);
    } finally {
      dir.remove();
    }
  });

  it('a start that fails during shutdown does not stop the rest from closing', async () => {
    const lifecycle = new Lifecycle(quiet);
    const closed: string[] = [];
    lifecycle.add('redis', () => void closed.push('redis'));
    const failing = lifecycle.starting(Promise.reject(new Error('initdb failed')));
    await lifecycle.close();
    await expect(failing).rejects.toThrow('initdb failed');
    expect(closed).toEqual(['redis']);
  });

  it('a crash (an unhandled rejection) stops the child servers before it exits 1', async () => {
    const proc = spawn(
      process.execPath,
      ['--import', 'tsx', join(import.meta.dirname, '..', 'fixtures', 'crash-after-start.ts')],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const [code] = (await once(proc, 'exit')) as [number | null];
    const pid = Number(/started (\d+)/.exec(out)?.[1]);
    expect(pid).toBeGreaterThan(0);
    let left = true;
    try {
      // the child server is gone (signal 0 only asks whether the process exists)
      expect(() => process.kill(pid, 0)).toThrow(/ESRCH/);
      left = false;
    } finally {
      if (left) process.kill(pid, 'SIGKILL');
    }
    expect(code).toBe(1);
  });
});
