/**
 * `tsx load-tests/bench/profile.ts <file.cpuprofile>`: where a process's CPU time went, by package
 * (node_modules/<pkg>), our own code (src/...), Node internals, GC and idle. Used to explain the
 * HTTP benchmark's figures (`npm run bench -- --cpu-prof <dir> --only <scenario>`).
 */
import { readFileSync } from 'node:fs';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}
interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
}

function bucket(n: Node): string {
  const { url, functionName } = n.callFrame;
  if (functionName === '(idle)') return '(idle)';
  if (functionName === '(garbage collector)') return '(gc)';
  if (functionName === '(program)') return '(program: native, not JS)';
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (m) return m[1]!;
  if (url.includes('/src/'))
    return `ours: ${url.slice(url.indexOf('/src/') + 1).replace(/\?.*$/, '')}`;
  if (url.startsWith('node:')) return `node: ${url.slice(5).split('/')[0]}`;
  return url ? 'other' : `(native) ${functionName || 'anonymous'}`;
}

const file = process.argv[2];
if (!file) {
  process.stderr.write('usage: tsx load-tests/bench/profile.ts <file.cpuprofile> [top=25]\n');
  process.exit(2);
}
const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(p.nodes.map((n) => [n.id, n]));
const self = new Map<string, number>();
let total = 0;
p.samples.forEach((id, i) => {
  const dt = p.timeDeltas[i] ?? 0;
  total += dt;
  const b = bucket(byId.get(id)!);
  self.set(b, (self.get(b) ?? 0) + dt);
});
const busy = total - (self.get('(idle)') ?? 0);
const top = Number(process.argv[3] ?? 25);
process.stdout.write(`self time by bucket (share of busy time ${(busy / 1e6).toFixed(1)} s):\n`);
for (const [b, us] of [...self].sort((a, c) => c[1] - a[1]).slice(0, top)) {
  if (b === '(idle)') continue;
  process.stdout.write(`${((us / busy) * 100).toFixed(1).padStart(5)} %  ${b}\n`);
}
