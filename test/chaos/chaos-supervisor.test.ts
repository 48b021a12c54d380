/**
 * The chaos stack's supervisor (load-tests/chaos/supervisor.ts) on real child processes: a small
 * HTTP server per slot answers /readyz; the first one of a slot may exit by itself once ready.
 */
import { spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { Supervisor, type SupervisedProcess } from '../../load-tests/chaos/supervisor.js';
import { freePort } from '../../src/launcher/process.js';
import { deadlineOf } from '../support/cli.js';

// serves /readyz; with EXIT_AFTER_MS it exits (code 3) that long after it listens
const SERVER = `
const http = require('node:http');
const s = http.createServer((req, res) => res.end('ok'));
s.listen(Number(process.env.PORT), '127.0.0.1', () => {
  const ms = Number(process.env.EXIT_AFTER_MS || 0);
  if (ms) setTimeout(() => process.exit(3), ms);
});
`;

const started: SupervisedProcess[] = [];
const supervisors: Array<Supervisor<SupervisedProcess>> = [];
afterEach(() => {
  // stopped first: a supervisor still watching would start a killed process again
  for (const s of supervisors.splice(0)) s.stop();
  for (const p of started.splice(0)) p.child.kill('SIGKILL');
});

function spawnServer(port: number, exitAfterMs = 0): SupervisedProcess {
  const child = spawn(process.execPath, ['-e', SERVER], {
    env: { PATH: process.env.PATH, PORT: String(port), EXIT_AFTER_MS: String(exitAfterMs) },
    stdio: 'ignore',
  });
  const p = { role: 'api' as const, n: 0, port, url: `http://127.0.0.1:${port}`, child };
  started.push(p);
  return p;
}

async function ready(p: SupervisedProcess): Promise<void> {
  const overdue = deadlineOf(`${p.url}/readyz to answer 200`, 5_000);
  for (;;) {
    overdue();
    if (p.child.exitCode !== null || p.child.signalCode !== null) throw new Error('exited');
    const ok = await fetch(`${p.url}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function harness(firstExitsAfterMs: number) {
  const port = await freePort();
  const list: SupervisedProcess[] = [spawnServer(port, firstExitsAfterMs)];
  const lines: string[] = [];
  let spawns = 0;
  const sup = new Supervisor<SupervisedProcess>({
    spawn: (p) => {
      spawns++;
      return spawnServer(p.port);
    },
    ready,
    replace: (old, fresh) => {
      list[list.indexOf(old)] = fresh;
    },
    progress: (l) => lines.push(l),
    backoffMs: 200,
  });
  supervisors.push(sup);
  await ready(list[0]!);
  sup.watch(list[0]!);
  return { sup, list, lines, spawns: () => spawns };
}

const until = async (what: string, probe: () => boolean, ms = 10_000) => {
  const deadline = Date.now() + ms;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};

describe('the chaos stack supervisor', () => {
  it('starts a process that exited by itself again on its port, and records the exit', async () => {
    const h = await harness(300);
    const first = h.list[0]!;
    await until('the exit', () => first.child.exitCode !== null);
    expect(h.sup.isRecovering(first)).toBe(true);
    await until('the new process', () => h.list[0] !== first && !h.sup.isRecovering(first));
    await ready(h.list[0]!);
    expect(h.spawns()).toBe(1);
    expect(h.sup.selfExits).toEqual([{ role: 'api', n: 0, how: '3', atMs: expect.any(Number) }]);
    expect(h.lines[0]).toBe('api 0 exited by itself (3); a supervisor starts it again');
  });

  it('leaves a process killed on purpose to whoever killed it, and a stopped stack alone', async () => {
    const h = await harness(0);
    await h.sup.kill(h.list[0]!);
    // the scenario: three backoffs' time, for a respawn that must not come
    await new Promise((r) => setTimeout(r, 600));
    expect(h.spawns()).toBe(0);
    expect(h.sup.selfExits).toEqual([]);

    const again = await h.sup.restart(h.list[0]!);
    expect(h.list[0]).toBe(again);
    expect(h.spawns()).toBe(1);
    h.sup.stop();
    again.child.kill('SIGTERM');
    await until('the stop', () => again.child.signalCode !== null);
    // the scenario: three backoffs' time, for a respawn that must not come
    await new Promise((r) => setTimeout(r, 600));
    expect(h.spawns()).toBe(1);
    expect(h.sup.selfExits).toEqual([]);
  });

  it('watches the process it started again: a second exit of its own is handled too', async () => {
    const h = await harness(0);
    await h.sup.kill(h.list[0]!);
    const again = await h.sup.restart(h.list[0]!);
    again.child.kill('SIGKILL'); // not through the supervisor: as if it crashed
    await until('the second process', () => h.spawns() === 2 && !h.sup.isRecovering(again));
    await ready(h.list[0]!);
    expect(h.sup.selfExits.map((e) => e.how)).toEqual(['SIGKILL']);
  });
});
