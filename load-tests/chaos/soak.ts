/**
 * `npm run chaos:soak`: the chaos run for N seeds back to back while two busy loops take CPU
 * from it (a verdict that holds only on an idle machine is not one), a line per run and a
 * summary. Exit 1 when any run fails. Every other flag goes to each run (`--topology single`,
 * `--mode default`, `--faults ...`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';

const USAGE = `usage: npm run chaos:soak -- [--seeds N] [--first-seed S] [--duration S] [--busy N]
                           [--out DIR] [any flag of npm run chaos]
  --seeds N        how many runs, seeds S, S+1, ...                 default 10
  --first-seed S   the first seed                                    default 1
  --duration S     seconds of sale per run                           default 60
  --busy N         busy loops beside the runs                        default 2
  --out DIR        one report folder per seed in it                  default chaos-soak`;

function usage(problem: string): never {
  console.error(`chaos:soak: ${problem}\n\n${USAGE}`);
  process.exit(2);
}

let parsed: ReturnType<typeof parse>;
function parse() {
  return parseArgs({
    strict: false,
    options: {
      seeds: { type: 'string', default: '10' },
      'first-seed': { type: 'string', default: '1' },
      duration: { type: 'string', default: '60' },
      busy: { type: 'string', default: '2' },
      out: { type: 'string', default: 'chaos-soak' },
      help: { type: 'boolean', short: 'h' },
    },
  });
}
try {
  parsed = parse();
} catch (err) {
  usage((err as Error).message.split('. ')[0]!);
}
const v = parsed.values as Record<string, string | boolean | undefined>;
if (v.help) {
  console.log(USAGE);
  process.exit(0);
}
const whole = (name: string, min: number) => {
  const s = String(v[name]);
  if (!/^\d+$/.test(s) || Number(s) < min) usage(`--${name} must be a whole number >= ${min}`);
  return Number(s);
};
const seeds = whole('seeds', 1);
const firstSeed = whole('first-seed', 0);
const duration = whole('duration', 20);
const busy = whole('busy', 0);
const outDir = resolve(String(v.out));
const mine = new Set(['seeds', 'first-seed', 'duration', 'busy', 'out', 'help']);
// the flags for each run: every one this command does not take itself (a flag and its value)
const passOn: string[] = [];
for (let i = 2, argv = process.argv; i < argv.length; i++) {
  const name = argv[i]!.replace(/^--?/, '').split('=')[0]!;
  const hasValue =
    !argv[i]!.includes('=') && argv[i + 1] !== undefined && !argv[i + 1]!.startsWith('-');
  if (!mine.has(name)) passOn.push(argv[i]!, ...(hasValue ? [argv[i + 1]!] : []));
  if (hasValue) i++;
}

/** A process that spins until killed: a neighbour taking one core. */
const busyLoop = (): ChildProcess =>
  spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' });

interface RunFigures {
  operations: number;
  ok: number;
  unknown: number;
  faults: number;
  lostAcknowledged: number;
  invariantsBroken: string[];
  lateReturns: { count: number; longestMs: number } | null;
}

function runOnce(seed: number): Promise<{ code: number; figures?: RunFigures; ms: number }> {
  const started = Date.now();
  const args = [
    join(import.meta.dirname, 'run.ts'),
    '--seed',
    String(seed),
    '--duration',
    String(duration),
    '--out',
    join(outDir, `seed-${seed}`),
    ...passOn,
  ];
  const child = spawn(join('node_modules', '.bin', 'tsx'), args, {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  return new Promise((done) =>
    child.on('exit', (code) => {
      const json = out
        .split('\n')
        .reverse()
        .find((l) => l.startsWith('{"seed"'));
      done({
        code: code ?? 1,
        ...(json && { figures: JSON.parse(json) as RunFigures }),
        ms: Date.now() - started,
      });
    }),
  );
}

const loops = Array.from({ length: busy }, busyLoop);
const stopLoops = () => loops.forEach((l) => l.kill('SIGKILL'));
process.once('SIGINT', () => {
  stopLoops();
  process.exit(130);
});
console.log(
  `chaos:soak: ${seeds} seeds from ${firstSeed}, ${duration} s each, ${busy} busy loops beside${passOn.length ? `, runs with ${passOn.join(' ')}` : ''}`,
);
let failed = 0;
try {
  for (let seed = firstSeed; seed < firstSeed + seeds; seed++) {
    const r = await runOnce(seed);
    const f = r.figures;
    const pass = r.code === 0;
    if (!pass) failed++;
    console.log(
      `seed ${String(seed).padStart(4)}  ${pass ? 'pass' : 'FAIL'}  ${(r.ms / 1000).toFixed(0).padStart(4)} s  ` +
        (f
          ? `faults ${f.faults}, ops ${f.operations}, ok ${f.ok}, unknown ${f.unknown}, lost acks ${f.lostAcknowledged}, late returns ${f.lateReturns?.count ?? 0}${f.lateReturns ? ` (longest ${(f.lateReturns.longestMs / 1000).toFixed(1)} s)` : ''}${f.invariantsBroken.length ? `, BROKEN ${f.invariantsBroken.join(',')}` : ''}`
          : `no figures (exit ${r.code}): see ${join(outDir, `seed-${seed}`)}`),
    );
  }
} finally {
  stopLoops();
}
console.log(
  `chaos:soak: ${seeds - failed}/${seeds} runs passed${failed ? `, ${failed} failed` : ''}`,
);
process.exit(failed ? 1 : 0);
