/**
 * A TCP proxy that delays every chunk by a fixed time in each direction, keeping order: a
 * userland stand-in for `tc netem` where the kernel has no netem (as on the machines this project
 * is built on). It costs some CPU of its own, so it understates a real network's effect less
 * than loopback does, but it is not a network: use load-tests/netem.sh where netem exists.
 *
 *   tsx load-tests/bench/delay-proxy.ts <listen port> <target host:port> <delay ms each way>
 */
import { createConnection, createServer, type Socket } from 'node:net';

export function delayedPipe(from: Socket, to: Socket, delayMs: number): void {
  // One timer per chunk would reorder nothing (timers of equal delay fire in order), but would
  // cost a timer per packet; a queue drained by one timer keeps it cheap.
  const queue: Array<{ at: number; data: Buffer }> = [];
  let timer: NodeJS.Timeout | undefined;
  const drain = () => {
    timer = undefined;
    const now = performance.now();
    while (queue.length && queue[0]!.at <= now) to.write(queue.shift()!.data);
    if (queue.length) timer = setTimeout(drain, Math.max(0, queue[0]!.at - now));
  };
  from.on('data', (data: Buffer) => {
    queue.push({ at: performance.now() + delayMs, data });
    timer ??= setTimeout(drain, delayMs);
  });
  from.on('close', () => setTimeout(() => to.destroy(), delayMs + 1));
  from.on('error', () => to.destroy());
}

const [listen, target, delay] = process.argv.slice(2);
if (listen && target && delay) {
  const [host, port] = target.split(':') as [string, string];
  const server = createServer((client) => {
    client.setNoDelay(true);
    const upstream = createConnection({ host, port: Number(port) });
    upstream.setNoDelay(true);
    delayedPipe(client, upstream, Number(delay));
    delayedPipe(upstream, client, Number(delay));
  });
  server.listen(Number(listen), '127.0.0.1', () =>
    process.stderr.write(`[delay-proxy] 127.0.0.1:${listen} -> ${target}, +${delay} ms each way\n`),
  );
  process.on('SIGTERM', () => process.exit(0));
}
