/**
 * A TCP proxy in front of one Redis server, for the nemesis's network faults (no tc/netem or
 * network namespaces here: the machine has no NET_ADMIN). `cut()` resets every connection and
 * refuses new ones until `heal()` (a partition between its clients and that server); `delay(ms)`
 * holds every chunk that long in both directions (a slow link); `lagReplicas()` holds, from then
 * on, what the server sends down its replica links (a connection that asked for PSYNC/SYNC), so
 * a replica falls behind while clients are served at once, until `heal()` resets those links and
 * drops what was held. Otherwise bytes pass unchanged.
 */
import { connect, createServer, type Socket } from 'node:net';
import { freePort } from '../../src/launcher/process.js';

export interface FaultProxy {
  port: number;
  url: string;
  cut(): void;
  delay(ms: number): void;
  lagReplicas(): void;
  heal(): void;
  close(): Promise<void>;
}

export async function faultProxy(targetPort: number): Promise<FaultProxy> {
  const port = await freePort();
  let cut = false;
  let delayMs = 0;
  let lagging = false;
  const sockets = new Set<Socket>();
  /** client sockets of replica links (they sent PSYNC or SYNC) */
  const replicas = new Set<Socket>();
  // bytes keep their order: once one chunk is held, the ones after it wait behind it
  const forward = (from: Socket, to: Socket) => {
    const queue: Array<{ chunk: Buffer; due: number }> = [];
    let seen = 0;
    const pump = () => {
      while (queue.length && queue[0]!.due <= Date.now()) {
        const { chunk } = queue.shift()!;
        if (to.writable) to.write(chunk);
      }
      if (queue.length) setTimeout(pump, queue[0]!.due - Date.now());
    };
    from.on('data', (chunk: Buffer) => {
      // a replica's handshake (PING, REPLCONF x2, PSYNC) is in a link's first few chunks
      if (seen++ < 8 && /^P?SYNC\r/m.test(chunk.toString('latin1'))) replicas.add(from);
      // held for good: heal() resets the link, and the replica syncs again from the master
      if (lagging && replicas.has(to)) return;
      if (delayMs === 0 && queue.length === 0) return void to.write(chunk);
      queue.push({ chunk, due: Date.now() + delayMs });
      if (queue.length === 1) setTimeout(pump, delayMs);
    });
  };
  const server = createServer((client) => {
    if (cut) {
      client.resetAndDestroy();
      return;
    }
    const upstream = connect(targetPort, '127.0.0.1');
    sockets.add(client).add(upstream);
    forward(client, upstream);
    forward(upstream, client);
    const end = () => {
      client.destroy();
      upstream.destroy();
      replicas.delete(client);
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    cut() {
      cut = true;
      for (const s of sockets) s.resetAndDestroy();
      sockets.clear();
    },
    delay(ms) {
      delayMs = ms;
    },
    lagReplicas() {
      lagging = true;
    },
    heal() {
      cut = false;
      delayMs = 0;
      if (lagging) for (const r of replicas) r.resetAndDestroy();
      lagging = false;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
