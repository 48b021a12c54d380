/** One autocannon run against a POST route, and the figures the HTTP benchmark keeps of it. */
import autocannon from 'autocannon';

export interface Load {
  seconds: number;
  requests: number;
  status: Record<string, number>;
  errors: number;
  latencies: number[];
  /** Redis commands run while it lasted (INFO commandstats), background work included */
  redisCommands: number;
}

/** autocannon against POST `path`, a distinct X-User-Id per request. */
export async function load(
  base: string,
  path: string,
  productId: string,
  tag: string,
  opts: { duration: number; connections: number },
): Promise<Omit<Load, 'redisCommands'>> {
  let n = 0;
  const latencies: number[] = [];
  const r = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url: base,
        connections: opts.connections,
        duration: opts.duration,
        requests: [
          {
            method: 'POST',
            path,
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ productId }),
            setupRequest: (req) => ({
              ...req,
              headers: { ...req.headers, 'x-user-id': `${tag}-${n++}` },
            }),
          },
        ],
      },
      (err, result) => (err ? reject(err) : resolve(result)),
    );
    instance.on('response', (_client, _status, _bytes, ms) => latencies.push(ms));
  });
  const status: Record<string, number> = {};
  for (const [code, s] of Object.entries(r.statusCodeStats ?? {})) {
    status[code] = (s as { count: number }).count;
  }
  return {
    seconds: r.duration,
    requests: r.requests.total,
    status,
    errors: r.errors + r.timeouts,
    latencies,
  };
}

/** Adds `more` to `into` (rounds of one scenario). */
export function addLoad(into: Load, more: Load): void {
  into.seconds += more.seconds;
  into.requests += more.requests;
  into.errors += more.errors;
  into.redisCommands += more.redisCommands;
  for (const [c, k] of Object.entries(more.status)) into.status[c] = (into.status[c] ?? 0) + k;
  for (const ms of more.latencies) into.latencies.push(ms);
}
