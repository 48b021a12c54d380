/**
 * The chaos stack's API and worker processes, kept up as a supervisor (systemd, Kubernetes) keeps
 * them: the nemesis kills and restarts them on purpose, and a process that exits by itself after
 * it was ready (an API that gives up when BullMQ cannot start, say) is started again on its port.
 * Without this a run whose process exited by itself ended without a verdict ("fetch failed").
 * Every exit of its own is recorded, for the report.
 */
import type { ChildProcess } from 'node:child_process';

export interface SupervisedProcess {
  role: 'api' | 'worker';
  n: number;
  port: number;
  url: string;
  child: ChildProcess;
}

export interface SelfExit {
  role: 'api' | 'worker';
  n: number;
  /** exit code, or the signal's name */
  how: string;
  /** ms since the supervisor started */
  atMs: number;
}

const gone = (c: ChildProcess) => c.exitCode !== null || c.signalCode !== null;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class Supervisor<P extends SupervisedProcess> {
  readonly selfExits: SelfExit[] = [];
  /** processes killed on purpose (the nemesis, the stop): their exit is no one's surprise */
  private readonly killed = new WeakSet<ChildProcess>();
  /** slots ("api 1") being started again after an exit of their own */
  private readonly recovering = new Map<string, Promise<P | undefined>>();
  private readonly startedAt = Date.now();
  private stopping = false;

  constructor(
    private readonly o: {
      /** the same slot (role, n, port) in a new process */
      spawn: (p: P) => P;
      /** resolves once it answers /readyz; throws when it exits first or takes too long */
      ready: (p: P) => Promise<void>;
      /** the stack's lists point at the new process from now on */
      replace: (old: P, fresh: P) => void;
      progress: (line: string) => void;
      /** a supervisor's pause before it starts a process again */
      backoffMs?: number;
    },
  ) {}

  /** Watches a process that has become ready: an exit of its own starts it again. */
  watch(p: P): void {
    p.child.once('exit', (code, sig) => {
      if (this.stopping || this.killed.has(p.child)) return;
      const how = sig ?? String(code);
      this.selfExits.push({ role: p.role, n: p.n, how, atMs: Date.now() - this.startedAt });
      this.o.progress(`${p.role} ${p.n} exited by itself (${how}); a supervisor starts it again`);
      const key = slot(p);
      const again = (async () => {
        await sleep(this.o.backoffMs ?? 1_000);
        return this.restart(p).catch((err: Error) => {
          this.o.progress(`${p.role} ${p.n} could not be started again: ${err.message}`);
          return undefined;
        });
      })().finally(() => this.recovering.delete(key));
      this.recovering.set(key, again);
    });
  }

  /** Whether the slot is down after an exit of its own (the nemesis leaves it alone then). */
  isRecovering(p: SupervisedProcess): boolean {
    return this.recovering.has(slot(p));
  }

  /** The processes exiting from now on are stopped on purpose. */
  stop(): void {
    this.stopping = true;
  }

  /** SIGKILL on purpose, then wait until it is gone. */
  async kill(p: P): Promise<void> {
    this.killed.add(p.child);
    if (gone(p.child)) return;
    const exited = new Promise((r) => p.child.once('exit', r));
    p.child.kill('SIGKILL');
    await exited;
  }

  /** Starts `p`'s slot again and waits until it is ready; one that exits while starting is started again (5 tries). */
  async restart(p: P): Promise<P> {
    for (let attempt = 1; ; attempt++) {
      if (this.stopping) throw new Error('the stack is stopping');
      const fresh = this.o.spawn(p);
      this.o.replace(p, fresh);
      try {
        await this.o.ready(fresh);
        this.watch(fresh);
        return fresh;
      } catch (err) {
        if (attempt >= 5 || this.stopping) throw err;
        this.o.progress(
          `${p.role} ${p.n} did not start (${(err as Error).message}); starting it again`,
        );
        await this.kill(fresh);
        p = fresh;
      }
    }
  }
}

const slot = (p: SupervisedProcess) => `${p.role} ${p.n}`;
