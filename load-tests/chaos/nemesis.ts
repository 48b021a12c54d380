/**
 * The nemesis: a schedule of faults drawn from the seed only (the same seed and duration give
 * the same schedule on any machine), and what each fault does to the stack and how it heals.
 */
import { isAlive } from '../../src/launcher/process.js';
import { pauseTree } from './pause.js';
import { NODE_TIMEOUT_MS, type ChaosStack, type Topology } from './stack.js';

export const FAULT_KINDS = {
  /** SIGKILL a Redis master; its replica is promoted; the launcher's supervisor restarts it */
  'kill-master': 'cluster',
  /** SIGSTOP a Redis master past the cluster node timeout (its replica is promoted), then SIGCONT */
  'pause-master': 'cluster',
  /** SIGSTOP the one Redis server, then SIGCONT */
  'freeze-redis': 'single',
  /** the proxy between API/workers and one Redis server (a master) resets and refuses connections */
  'cut-redis': 'both',
  /** the same proxy holds every chunk 200-800 ms */
  'delay-redis': 'both',
  /** SIGKILL an API process; it is started again when the fault heals */
  'kill-api': 'both',
  /** SIGKILL an order worker (mid-batch under load); started again when the fault heals */
  'kill-worker': 'both',
  /** SIGSTOP PostgreSQL and its backends, then SIGCONT */
  'pause-postgres': 'both',
  /**
   * the proxy holds what a master sends its replica (LAG_BEFORE_KILL_MS), then the master is
   * SIGKILLed: its replica is promoted without the writes of that lag. Opt-in (--faults): in
   * default mode it loses acknowledged sales on purpose
   */
  'lag-kill-master': 'cluster',
} as const satisfies Record<string, Topology | 'both'>;

export type FaultKind = keyof typeof FAULT_KINDS;

/** kinds drawn only when named in --faults (not in the default schedule, CI's seed 7 included) */
const OPT_IN: ReadonlySet<FaultKind> = new Set(['lag-kill-master']);

/** The kinds a topology has: those drawn by default, or (`all`) every one --faults may name. */
export const kindsFor = (topology: Topology, all = false): FaultKind[] =>
  (Object.keys(FAULT_KINDS) as FaultKind[]).filter(
    (k) => (FAULT_KINDS[k] === 'both' || FAULT_KINDS[k] === topology) && (all || !OPT_IN.has(k)),
  );

/** ms the replica link is held before the master is killed: the acknowledged writes to lose */
export const LAG_BEFORE_KILL_MS = 1_500;

/** faults on a Redis server: one at a time, so a shard never loses its master and its replica */
const ON_REDIS: ReadonlySet<FaultKind> = new Set([
  'kill-master',
  'lag-kill-master',
  'pause-master',
  'freeze-redis',
  'cut-redis',
  'delay-redis',
]);

export interface Fault {
  kind: FaultKind;
  /** ms after the sale starts */
  at: number;
  /** ms it lasts before it heals */
  lasts: number;
  /** which server or process of its kind (modulo how many there are then) */
  target: number;
  /** delay-redis: ms each chunk is held */
  delayMs?: number;
}

/** Every hash slot: the one Redis of the single topology is the sick shard of its faults. */
export const ALL_SLOTS: Array<[number, number]> = [[0, 16383]];

/** What `inject` found: the slots of the Redis server it struck (none for a process fault). */
export interface Struck {
  applied: boolean;
  sickSlots?: Array<[number, number]>;
  /** lag-kill-master: when the replica link was held and when the master was killed (epoch ms) */
  lagged?: { from: number; killed: number };
}

/** mulberry32: small, seedable, the same sequence on every machine */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const between = (next: () => number, lo: number, hi: number) =>
  lo + Math.floor(next() * (hi - lo + 1));

/** how long each kind lasts: a paused master must outlast the node timeout to be failed over */
function lastsFor(kind: FaultKind, next: () => number): number {
  switch (kind) {
    case 'pause-master':
      return between(next, 3 * NODE_TIMEOUT_MS, 4 * NODE_TIMEOUT_MS);
    case 'kill-master':
    case 'lag-kill-master':
      return between(next, 3 * NODE_TIMEOUT_MS, 5 * NODE_TIMEOUT_MS);
    default:
      return between(next, 2_000, 6_000);
  }
}

/**
 * A fault starts every 2-6 s from 4 s in, so several are under way at times; faults on Redis
 * servers do not overlap each other (a 2 s gap after one heals), nor PostgreSQL pauses. Every fault heals 3 s before
 * `durationMs` ends. Kinds are drawn round-robin from a seeded shuffle first, so a short run
 * still sees every kind it can fit.
 */
export function schedule(seed: number, durationMs: number, kinds: FaultKind[]): Fault[] {
  const next = rng(seed);
  const faults: Fault[] = [];
  if (kinds.length === 0) return faults;
  const order = [...kinds];
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  let at = 4_000;
  const freeAt = { redis: 0, postgres: 0 };
  const groupOf = (k: FaultKind) =>
    ON_REDIS.has(k) ? 'redis' : k === 'pause-postgres' ? 'postgres' : undefined;
  for (let i = 0; ; i++) {
    const kind = i < order.length ? order[i]! : kinds[Math.floor(next() * kinds.length)]!;
    const lasts = lastsFor(kind, next);
    const group = groupOf(kind);
    const start = group ? Math.max(at, freeAt[group]) : at;
    if (start + lasts > durationMs - 3_000) {
      if (i < order.length * 3) {
        at += between(next, 2_000, 6_000);
        if (at > durationMs) break;
        continue;
      }
      break;
    }
    const fault: Fault = { kind, at: start, lasts, target: Math.floor(next() * 6) };
    if (kind === 'delay-redis') fault.delayMs = between(next, 200, 800);
    faults.push(fault);
    if (group) freeAt[group] = start + lasts + 2_000;
    at += between(next, 2_000, 6_000);
  }
  return faults.sort((a, b) => a.at - b.at);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** processes (by role and number) a fault has taken down and not yet started again */
const down = new Set<string>();
const slot = (p: { role: string; n: number }) => `${p.role} ${p.n}`;

/** Injects `f`, waits its length, heals it; not applied when it had no target (nothing up). */
export async function inject(stack: ChaosStack, f: Fault): Promise<Struck> {
  switch (f.kind) {
    case 'kill-master':
    case 'lag-kill-master':
    case 'pause-master': {
      const masters = await stack.masters();
      const node = masters[f.target % masters.length];
      if (!node) return { applied: false };
      const struck: Struck = { applied: true, sickSlots: node.slots ?? [] };
      if (f.kind === 'pause-master') {
        const resume = pauseTree(node.pid());
        await sleep(f.lasts);
        resume();
        return struck;
      }
      const from = Date.now();
      if (f.kind === 'lag-kill-master') {
        node.proxy.lagReplicas();
        await sleep(LAG_BEFORE_KILL_MS);
      }
      process.kill(node.pid(), 'SIGKILL');
      if (f.kind === 'lag-kill-master') struck.lagged = { from, killed: Date.now() };
      node.proxy.heal();
      await sleep(f.lasts);
      // the supervisor restarts it (after twice the node timeout); healed once it answers
      for (let i = 0; i < 100 && !isAlive(node.pid()); i++) await sleep(200);
      return struck;
    }
    case 'freeze-redis': {
      const resume = pauseTree(stack.nodes[0]!.pid());
      await sleep(f.lasts);
      resume();
      return { applied: true, sickSlots: ALL_SLOTS };
    }
    case 'cut-redis':
    case 'delay-redis': {
      const masters = await stack.masters();
      const node = masters[f.target % masters.length] ?? stack.nodes[0]!;
      if (f.kind === 'cut-redis') node.proxy.cut();
      else node.proxy.delay(f.delayMs ?? 500);
      await sleep(f.lasts);
      node.proxy.heal();
      return { applied: true, sickSlots: node.slots ?? ALL_SLOTS };
    }
    case 'pause-postgres': {
      const resume = pauseTree(stack.postgres.process.pid);
      await sleep(f.lasts);
      resume();
      return { applied: true };
    }
    case 'kill-api':
    case 'kill-worker': {
      // one that is up: two faults on one process would start two on its port
      // (nor one a supervisor is starting again after an exit of its own)
      const list = (f.kind === 'kill-api' ? stack.apis : stack.workers).filter(
        (p) => !down.has(slot(p)) && !stack.isRecovering(p),
      );
      const p = list[f.target % list.length];
      if (!p) return { applied: false };
      down.add(slot(p));
      await stack.kill(p);
      await sleep(f.lasts);
      try {
        await stack.restart(p);
      } finally {
        down.delete(slot(p));
      }
      return { applied: true };
    }
  }
}
