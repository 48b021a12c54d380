/**
 * Another service in the same Prometheus (job `storefront`), as a shared Prometheus has: it
 * exports the generic names seckill exports too (http_requests_total,
 * http_request_duration_seconds, http_problems_total, lock_lost_total), with values that would
 * make the rules fire and the panels lie if a selector took them in: 500s and store-unavailable
 * answers at 100/s on POST /seckill, every request slower than 2.5 s, a lock lost every second.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export const FOREIGN_JOB = 'storefront';

/** What the foreign series alone would fire if a rule took them in. */
export const FOREIGN_WOULD_FIRE = [
  'SeckillStoreUnavailable',
  'SeckillHigh5xxRate',
  'SeckillLockLost',
  'SeckillPurchaseLatency',
];

/** The status it answers, which seckill never does in the observed runs' healthy sale. */
export const FOREIGN_STATUS = '500';

export interface ForeignService {
  target: string;
  stop(): Promise<void>;
}

/** The exposition at `seconds` after start: counters grow with time, so rates are steady. */
export function foreignMetrics(seconds: number): string {
  const n = Math.floor(seconds * 100);
  const seckill = 'method="POST",route="/seckill",status="500"';
  return [
    '# TYPE http_requests_total counter',
    `http_requests_total{${seckill}} ${n}`,
    '# TYPE http_problems_total counter',
    `http_problems_total{route="/seckill",code="store-unavailable"} ${n}`,
    '# TYPE http_request_duration_seconds histogram',
    ...['0.5', '1', '2.5'].map(
      (le) => `http_request_duration_seconds_bucket{${seckill},le="${le}"} 0`,
    ),
    `http_request_duration_seconds_bucket{${seckill},le="+Inf"} ${n}`,
    `http_request_duration_seconds_sum{${seckill}} ${n * 3}`,
    `http_request_duration_seconds_count{${seckill}} ${n}`,
    '# TYPE lock_lost_total counter',
    `lock_lost_total ${Math.floor(seconds)}`,
    '',
  ].join('\n');
}

export async function startForeignService(): Promise<ForeignService> {
  const started = Date.now();
  const server: Server = createServer((req, res) => {
    if (req.url !== '/metrics') {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
    res.end(foreignMetrics((Date.now() - started) / 1000));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    target: `127.0.0.1:${port}`,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A rule or panel as written before it selected this service: its job matchers removed. */
export function unselected(expr: string): string {
  return expr
    .replace(/job=~"(?:\(?seckill-api\|seckill-worker\)?|\$job)",?/g, '')
    .replace(/namespace=~"\$namespace",?|instance=~"\$instance",?/g, '');
}
