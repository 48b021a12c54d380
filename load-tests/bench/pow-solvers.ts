/**
 * The crowd's proofs of work, solved off the bench's event loop: a pool of worker threads (one a
 * core), each hashing with node:crypto's one-shot `hash` (about twice createHash's speed). Solved
 * on the client's own thread, 1 000 shoppers' challenges (~32 500 hashes each on average, ~40 ms)
 * held every poll and purchase of the crowd for 40 s: the line of `room + challenge` looked stuck
 * for its first 45 s while the API had admitted nobody only because nobody had joined yet.
 * A real crowd solves on its own devices; here the solvers share the machine's cores with the API,
 * so the report states the CPU they took (`solveCpuSeconds`).
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';

const SOLVER = `
const { parentPort } = require('node:worker_threads');
const { hash } = require('node:crypto');
parentPort.on('message', ({ id, salt, challenge, maxnumber }) => {
  const started = process.cpuUsage();
  let number = -1;
  for (let n = 0; n <= maxnumber; n++) {
    if (hash('sha256', salt + n) === challenge) { number = n; break; }
  }
  const used = process.cpuUsage(started);
  parentPort.postMessage({ id, number, cpuUs: used.user + used.system });
});
`;

interface Solver {
  worker: Worker;
  pending: number;
}

export interface PowPuzzle {
  salt: string;
  challenge: string;
  maxnumber: number;
}

export class PowSolvers {
  private readonly solvers: Solver[];
  private readonly waiting = new Map<number, (r: { number: number; cpuUs: number }) => void>();
  private next = 0;
  /** CPU the solvers took, microseconds (the crowd's devices' work, done on this machine) */
  cpuUs = 0;
  solved = 0;

  constructor(size = availableParallelism()) {
    this.solvers = Array.from({ length: Math.max(1, size) }, () => {
      const worker = new Worker(SOLVER, { eval: true });
      worker.unref();
      const solver = { worker, pending: 0 };
      worker.on('message', (r: { id: number; number: number; cpuUs: number }) => {
        solver.pending--;
        const done = this.waiting.get(r.id);
        this.waiting.delete(r.id);
        done?.(r);
      });
      return solver;
    });
  }

  /** The number whose hash is the challenge; throws when there is none up to maxnumber. */
  async solve(p: PowPuzzle): Promise<number> {
    const id = this.next++;
    const solver = this.solvers.reduce((a, b) => (b.pending < a.pending ? b : a));
    solver.pending++;
    const r = await new Promise<{ number: number; cpuUs: number }>((resolve) => {
      this.waiting.set(id, resolve);
      solver.worker.postMessage({
        id,
        salt: p.salt,
        challenge: p.challenge,
        maxnumber: p.maxnumber,
      });
    });
    this.cpuUs += r.cpuUs;
    if (r.number < 0) throw new Error('a challenge with no solution');
    this.solved++;
    return r.number;
  }

  async close(): Promise<void> {
    await Promise.all(this.solvers.map((s) => s.worker.terminate()));
  }
}
