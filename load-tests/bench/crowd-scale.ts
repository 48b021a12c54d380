/**
 * What a line costs at scale in `npm run bench:crowd` (docs/benchmarks.md, a line of 50,000): a
 * sample a second of the API process's CPU and memory (/proc), Redis's memory and commands
 * (INFO), and the line's length (the clients' own count); from them the API CPU per 1,000 waiting
 * shoppers, the memory per place in the API process and in Redis, and Redis's commands a second.
 */
import { readFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { cpuSeconds } from './cpu.js';
import { percentile } from './report.js';

export interface ScaleSample {
  at: number;
  waiting: number;
  joined: number;
  apiCpuS: number;
  apiRssBytes: number;
  redisBytes: number;
  redisCommands: number;
}

function rssBytes(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

async function redisInfo(redis: Redis): Promise<{ bytes: number; commands: number }> {
  const info = await redis.info();
  const field = (name: string) => Number(new RegExp(`^${name}:(\\d+)`, 'm').exec(info)?.[1] ?? 0);
  return { bytes: field('used_memory'), commands: field('total_commands_processed') };
}

/** Samples every `everyMs` until stopped; the first sample is the baseline. */
export function startSampler(o: {
  apiPid: number;
  redisUrl: string;
  line: () => { waiting: number; joined: number };
  everyMs?: number;
}): { stop(): Promise<ScaleSample[]> } {
  const redis = new Redis(o.redisUrl, { lazyConnect: false, maxRetriesPerRequest: 1 });
  const samples: ScaleSample[] = [];
  const take = async () => {
    const r = await redisInfo(redis);
    samples.push({
      at: Date.now(),
      ...o.line(),
      apiCpuS: cpuSeconds({ API: o.apiPid }).API ?? 0,
      apiRssBytes: rssBytes(o.apiPid),
      redisBytes: r.bytes,
      redisCommands: r.commands,
    });
  };
  let running = take();
  const timer = setInterval(() => {
    running = running.then(take).catch(() => undefined);
  }, o.everyMs ?? 1_000);
  return {
    async stop() {
      clearInterval(timer);
      await running.then(take).catch(() => undefined);
      redis.disconnect();
      return samples;
    },
  };
}

export interface ScaleFigures {
  peakWaiting: number;
  /** cores of API CPU per 1,000 shoppers in line, over the time anyone was in line */
  apiCoresPer1kWaiting: number;
  pollP50Ms: number;
  pollP99Ms: number;
  polls: number;
  /** the API process's resident memory grown, per place (joined shopper) at the line's peak */
  apiBytesPerPlace: number;
  /** Redis's used memory grown, per place at the line's peak */
  redisBytesPerPlace: number;
  /** Redis commands a second over the time anyone was in line, and the busiest second */
  redisCommandsPerS: number;
  redisCommandsPeakPerS: number;
  /** the time anyone was in line (s) */
  lineSeconds: number;
  /** a poll's time in the API (its own histogram, from the request to the answer), p50 and p99 */
  apiPollP50Ms: number;
  apiPollP99Ms: number;
  /** the load generator's own event-loop delay, p99 (its share of the client-side poll time) */
  clientLoopP99Ms: number;
}

/** The API's poll histogram (http_request_duration_seconds of the poll's route), cumulative. */
export async function pollHistogram(base: string): Promise<Map<number, number>> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const buckets = new Map<number, number>();
  const line = /^http_request_duration_seconds_bucket\{([^}]*)\} (\d+(?:\.\d+)?)$/gm;
  for (const m of text.matchAll(line)) {
    const labels = m[1]!;
    if (!labels.includes('route="/products/:id/queue"') || !labels.includes('method="GET"'))
      continue;
    const le = /le="([^"]+)"/.exec(labels)![1]!;
    const bound = le === '+Inf' ? Infinity : Number(le);
    buckets.set(bound, (buckets.get(bound) ?? 0) + Number(m[2]));
  }
  return buckets;
}

/** A percentile of the polls between two histograms, linear within its bucket (ms). */
export function histogramPercentile(
  before: Map<number, number>,
  after: Map<number, number>,
  p: number,
): number {
  const bounds = [...after.keys()].sort((x, y) => x - y);
  const counts = bounds.map((b) => (after.get(b) ?? 0) - (before.get(b) ?? 0));
  const total = counts[counts.length - 1] ?? 0;
  if (total === 0) return 0;
  const want = (p / 100) * total;
  let lower = 0;
  let below = 0;
  for (let i = 0; i < bounds.length; i++) {
    const upper = bounds[i]!;
    if (counts[i]! >= want) {
      if (upper === Infinity) return lower * 1_000;
      const share = (want - below) / Math.max(1, counts[i]! - below);
      return (lower + share * (upper - lower)) * 1_000;
    }
    lower = upper;
    below = counts[i]!;
  }
  return lower * 1_000;
}

/** The load generator's event-loop delay, from now until read (ms, p99). */
export function clientLoop(): () => number {
  const h = monitorEventLoopDelay({ resolution: 10 });
  h.enable();
  return () => {
    h.disable();
    return h.percentile(99) / 1e6;
  };
}

export function scaleFigures(
  samples: ScaleSample[],
  pollMs: number[],
  api: { before: Map<number, number>; after: Map<number, number>; clientLoopP99Ms: number },
): ScaleFigures {
  const base = samples[0]!;
  let cpu = 0;
  let waitingSeconds = 0;
  let commands = 0;
  let seconds = 0;
  let peakRate = 0;
  for (let i = 1; i < samples.length; i++) {
    const [a, b] = [samples[i - 1]!, samples[i]!];
    if (a.waiting === 0 && b.waiting === 0) continue;
    const dt = (b.at - a.at) / 1_000;
    cpu += b.apiCpuS - a.apiCpuS;
    waitingSeconds += ((a.waiting + b.waiting) / 2) * dt;
    commands += b.redisCommands - a.redisCommands;
    seconds += dt;
    peakRate = Math.max(peakRate, (b.redisCommands - a.redisCommands) / dt);
  }
  const peak = samples.reduce((p, s) => (s.waiting > p.waiting ? s : p), base);
  const sorted = [...pollMs].sort((x, y) => x - y);
  const round = (x: number, digits = 0) => Math.round(x * 10 ** digits) / 10 ** digits;
  return {
    peakWaiting: peak.waiting,
    apiCoresPer1kWaiting: waitingSeconds ? round((cpu / waitingSeconds) * 1_000, 4) : 0,
    pollP50Ms: round(percentile(sorted, 50), 1),
    pollP99Ms: round(percentile(sorted, 99), 1),
    polls: pollMs.length,
    apiBytesPerPlace: peak.joined ? round((peak.apiRssBytes - base.apiRssBytes) / peak.joined) : 0,
    redisBytesPerPlace: peak.joined ? round((peak.redisBytes - base.redisBytes) / peak.joined) : 0,
    redisCommandsPerS: seconds ? round(commands / seconds) : 0,
    redisCommandsPeakPerS: round(peakRate),
    lineSeconds: round(seconds, 1),
    apiPollP50Ms: round(histogramPercentile(api.before, api.after, 50), 2),
    apiPollP99Ms: round(histogramPercentile(api.before, api.after, 99), 2),
    clientLoopP99Ms: round(api.clientLoopP99Ms, 1),
  };
}
