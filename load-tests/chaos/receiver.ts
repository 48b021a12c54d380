/**
 * The chaos run's webhook receiver, flaky on purpose (drawn from --seed): it answers 500 to some
 * deliveries, never answers others (the sender's timeout ends them), and is stopped and started
 * again on its port every so often (a receiver restarted mid-delivery). Each request is one
 * DeliveryOp of the history: the event it carried, the order's row version when it arrived, and
 * what was answered. It verifies every signature with the endpoint's secret (standardwebhooks).
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Webhook } from 'standardwebhooks';
import type { DeliveryOp } from './history.js';
import { rng } from './nemesis.js';

export interface FlakyReceiver {
  url: string;
  /** the endpoint's secret, once registered */
  secret: string;
  stats(): { requests: number; errors: number; hangs: number; restarts: number; unsigned: number };
  /** stops the restarts and the flakiness: the settle phase's deliveries all go through */
  calm(): void;
  close(): Promise<void>;
}

export interface ReceiverOptions {
  seed: number;
  now: () => number;
  /** the order's row version in PostgreSQL (null: no row); throws when it cannot be read */
  rowVersion: (orderId: string) => Promise<number | null>;
  record: (d: DeliveryOp) => void;
  /** shares of deliveries answered 500 and never answered */
  errorRate?: number;
  hangRate?: number;
  /** a restart every this many ms (down 1-3 s) */
  restartEveryMs?: number;
}

export async function startFlakyReceiver(o: ReceiverOptions): Promise<FlakyReceiver> {
  const random = rng(o.seed * 7_919 + 17);
  const errorRate = o.errorRate ?? 0.1;
  const hangRate = o.hangRate ?? 0.03;
  const sockets = new Set<Socket>();
  const counts = { requests: 0, errors: 0, hangs: 0, restarts: 0, unsigned: 0 };
  let op = 0;
  let calm = false;
  let port = 0;
  const receiver: FlakyReceiver = {
    url: '',
    secret: '',
    stats: () => ({ ...counts }),
    calm: () => {
      calm = true;
      clearInterval(restarts);
    },
    close: async () => {
      clearInterval(restarts);
      await stop();
    },
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        counts.requests++;
        const body = Buffer.concat(chunks).toString('utf8');
        let verified = false;
        try {
          new Webhook(receiver.secret).verify(body, req.headers as Record<string, string>);
          verified = true;
        } catch {
          counts.unsigned++;
        }
        const event = JSON.parse(body) as {
          id: string;
          type: string;
          subject: string;
          orderversion: number;
          data: { status: string };
        };
        // unread (PostgreSQL did not answer the receiver): it cannot check, so it takes nothing
        const rowVersion = await o.rowVersion(event.subject).catch(() => undefined);
        const draw = random();
        const answered = !verified
          ? 401
          : rowVersion === undefined
            ? 503
            : calm || draw >= errorRate + hangRate
              ? 204
              : draw < errorRate
                ? 500
                : 0;
        o.record({
          type: 'delivery',
          op: op++,
          atMs: o.now(),
          id: event.id,
          orderId: event.subject,
          version: event.orderversion,
          eventType: event.type,
          status: event.data.status,
          answered,
          verified,
          ...(rowVersion !== undefined && { rowVersion }),
        });
        if (answered === 0) {
          counts.hangs++;
          return; // never answered: the sender times out
        }
        if (answered === 500) counts.errors++;
        res.writeHead(answered).end();
      })();
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  const listen = () =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        port = (server.address() as AddressInfo).port;
        receiver.url = `http://127.0.0.1:${port}/seckill-events`;
        resolve();
      });
    });
  const stop = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      for (const s of sockets) s.destroy();
    });
  await listen();
  const restarts = setInterval(() => {
    if (calm) return;
    counts.restarts++;
    const downMs = 1_000 + Math.floor(random() * 2_000);
    void stop().then(() => setTimeout(() => void listen().catch(() => undefined), downMs));
  }, o.restartEveryMs ?? 15_000);
  restarts.unref();
  return receiver;
}
