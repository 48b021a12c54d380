/**
 * A real HTTP receiver of events (an order's, or a product's), as a warehouse would run one: it verifies each
 * delivery's Standard Webhooks signature (the `standardwebhooks` package), reads the order's row
 * when the event arrives (so an event sent before its commit would show), and answers as told:
 * 200, an error status (with Retry-After), a redirect, no answer at all (a timeout), or dies
 * mid-delivery (the socket destroyed with the request read). It can stop and start again on
 * the same port (a receiver restarted).
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { expect } from 'vitest';
import type { Db } from '../../src/db/index.js';
import { EVENT_FAMILIES } from '../../src/events/feed/event-types.js';

export type Answer =
  { status: number; headers?: Record<string, string> } | { hang: true } | { die: true };

export interface Arrival {
  id: string;
  type: string;
  /** the event's subject: the order id, or a product event's subject */
  orderId: string;
  /** the order's version, or the product event's subject sequence */
  version: number;
  /** what the receiver answered (0: it hung or died) */
  answered: number;
  /** the signature verified with one of the secrets it knows */
  verified: boolean;
  /** how many signatures the header carried */
  signatures: number;
  /** the order's row when the event arrived: its version, or null when there was none */
  rowVersion: number | null;
  /** the envelope's `data` as it came */
  data: unknown;
  seq: number;
}

export interface Receiver {
  url: string;
  port: number;
  /** every request, in arrival order */
  arrivals: Arrival[];
  /** the secrets it verifies with */
  secrets: string[];
  /** how it answers: per request (first match wins), else `fallback` */
  answer: (arrival: Omit<Arrival, 'answered' | 'seq'>) => Answer;
  /** acknowledged (2xx) deliveries, the first of each id, in arrival order */
  acked(): Arrival[];
  stop(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
}

export async function startReceiver(
  rowVersion: (orderId: string) => Promise<number | null>,
  port = 0,
): Promise<Receiver> {
  const sockets = new Set<Socket>();
  let seq = 0;
  const receiver: Receiver = {
    url: '',
    port,
    arrivals: [],
    secrets: [],
    answer: () => ({ status: 200 }),
    acked() {
      const seen = new Set<string>();
      return receiver.arrivals.filter((a) => {
        if (a.answered < 200 || a.answered >= 300 || seen.has(a.id)) return false;
        seen.add(a.id);
        return true;
      });
    },
    async stop() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      });
    },
    async start() {
      await listen(receiver.port);
    },
    close: () => receiver.stop(),
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const headers = {
          'webhook-id': String(req.headers['webhook-id'] ?? ''),
          'webhook-timestamp': String(req.headers['webhook-timestamp'] ?? ''),
          'webhook-signature': String(req.headers['webhook-signature'] ?? ''),
        };
        const verified = receiver.secrets.some((secret) => {
          try {
            new Webhook(secret).verify(body, headers);
            return true;
          } catch {
            return false;
          }
        });
        const event = JSON.parse(body) as {
          id: string;
          type: string;
          subject: string;
          orderversion?: number;
          subjectsequence?: number;
          data: unknown;
        };
        const arrival = {
          id: event.id,
          type: event.type,
          orderId: event.subject,
          version: (event.orderversion ?? event.subjectsequence)!,
          verified,
          signatures: headers['webhook-signature'].split(' ').length,
          rowVersion: await rowVersion(event.subject),
          data: event.data,
        };
        const answer = receiver.answer(arrival);
        const record = (answered: number) =>
          receiver.arrivals.push({ ...arrival, answered, seq: seq++ });
        if ('die' in answer) {
          record(0);
          req.socket.destroy();
          return;
        }
        if ('hang' in answer) {
          record(0);
          return; // never answers: the sender's timeout ends it
        }
        record(answer.status);
        res.writeHead(answer.status, answer.headers).end();
      })();
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  const listen = (at: number) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(at, '127.0.0.1', () => {
        server.off('error', reject);
        receiver.port = (server.address() as AddressInfo).port;
        receiver.url = `http://127.0.0.1:${receiver.port}/hooks`;
        resolve();
      });
    });
  await listen(port);
  return receiver;
}

/** An order's committed version, as a receiver checks on arrival (null: no row yet). */
export const orderVersionIn =
  (db: () => Db) =>
  async (orderId: string): Promise<number | null> =>
    (await db().selectFrom('orders').select('version').where('id', '=', orderId).executeTakeFirst())
      ?.version ?? null;

/**
 * A receiver, kept in `receivers` (closed by the file), with an endpoint for it of every event
 * type registered through the admin API: its secret is the receiver's.
 */
/**
 * The order events' types: an endpoint for a test of order events' delivery subscribes to these
 * alone, since a sale that sells out sends its fairness.report (a product event) a few seconds
 * later, which would open a lane of its own and, answered, recover the endpoint mid-test.
 */
export const ORDER_EVENTS = EVENT_FAMILIES.orders.types;

export async function receiverWithEndpoint(
  admin: (method: string, path: string, body?: unknown) => Promise<Response>,
  committed: (orderId: string) => Promise<number | null>,
  receivers: Receiver[],
  events: readonly string[] = ['*'],
): Promise<{ r: Receiver; id: string }> {
  const r = await startReceiver(committed);
  receivers.push(r);
  const res = await admin('POST', '/admin/webhook-endpoints', { url: r.url, events });
  expect(res.status).toBe(201);
  const { id, secret } = (await res.json()) as { id: string; secret: string };
  r.secrets.push(secret);
  return { r, id };
}
