/**
 * A push service on this machine, for the queue page's Web Push in Chromium (headless Chromium
 * cannot reach its real one, FCM). The test makes a browser-side subscription itself (a P-256 key
 * pair and an auth secret, as a browser would, whose endpoint is this server), and the page hands
 * it to the API as it would a real one. This server takes what the API sends as RFC 8030 says (a
 * POST with TTL, Urgency, Topic), checks its VAPID authorization (RFC 8292: an ES256 JWT for this
 * origin, signed by the key it names), decrypts the aes128gcm body (RFC 8291) with the
 * subscription's keys, and keeps each message for the test to deliver to the page's service
 * worker (Chrome DevTools Protocol, ServiceWorker.deliverPushMessage).
 */
import { createECDH, createPublicKey, randomBytes, verify } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
// http_ece is web-push's own dependency: the same RFC 8188 code, on the receiving side
// @ts-expect-error no types are published for http_ece
import ece from 'http_ece';

export interface PushedMessage {
  endpoint: string;
  /** the decrypted payload */
  text: string;
  headers: { ttl: string; urgency: string; topic: string; encoding: string };
  /** the VAPID key the message was signed with (base64url) */
  vapidKey: string;
  /** the JWT's claims: aud (this origin), exp, sub */
  claims: { aud: string; exp: number; sub: string };
}

export interface FakeSubscription {
  endpoint: string;
  keys: { p256dh: string; auth: string };
}

export interface LocalPushService {
  origin: string;
  /** a subscription as a browser would make it, its endpoint on this server */
  subscription(): FakeSubscription;
  /** every message received so far, in order */
  messages: PushedMessage[];
  /** refusals, with why (a bad signature, an unknown endpoint) */
  refused: string[];
  close(): Promise<void>;
}

const b64u = (buf: Buffer) => buf.toString('base64url');

/** The JWT of a VAPID authorization, verified against the key it names: its claims, or why not. */
function vapidClaims(
  auth: string,
  origin: string,
): { claims: PushedMessage['claims']; key: string } | string {
  const m = /^vapid t=([^,\s]+),\s*k=([A-Za-z0-9_-]+)$/.exec(auth);
  if (!m) return `not a VAPID authorization: ${auth.slice(0, 40)}`;
  const [, jwt, key] = m as unknown as [string, string, string];
  const [head, body, sig] = jwt.split('.') as [string, string, string];
  const raw = Buffer.from(key, 'base64url');
  const publicKey = createPublicKey({
    key: { kty: 'EC', crv: 'P-256', x: b64u(raw.subarray(1, 33)), y: b64u(raw.subarray(33, 65)) },
    format: 'jwk',
  });
  const ok = verify(
    'sha256',
    Buffer.from(`${head}.${body}`),
    { key: publicKey, dsaEncoding: 'ieee-p1363' },
    Buffer.from(sig, 'base64url'),
  );
  if (!ok) return 'bad VAPID signature';
  const claims = JSON.parse(Buffer.from(body, 'base64url').toString()) as PushedMessage['claims'];
  if (claims.aud !== origin) return `VAPID audience ${claims.aud}, not ${origin}`;
  if (claims.exp * 1000 < Date.now()) return 'VAPID token expired';
  return { claims, key };
}

export async function startPushService(): Promise<LocalPushService> {
  const subscribers = new Map<string, { ecdh: ReturnType<typeof createECDH>; auth: string }>();
  const messages: PushedMessage[] = [];
  const refused: string[] = [];
  let origin = '';
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const id = (req.url ?? '').replace(/^\/push\//, '');
      const sub = subscribers.get(id);
      const refuse = (status: number, why: string) => {
        refused.push(why);
        res.writeHead(status).end();
      };
      if (req.method !== 'POST' || !sub) return refuse(404, `no subscription ${id}`);
      const checked = vapidClaims(String(req.headers.authorization ?? ''), origin);
      if (typeof checked === 'string') return refuse(401, checked);
      let text: string;
      try {
        text = ece
          .decrypt(Buffer.concat(chunks), {
            version: 'aes128gcm',
            privateKey: sub.ecdh,
            authSecret: sub.auth,
          })
          .toString('utf8');
      } catch (err) {
        return refuse(400, `cannot decrypt: ${(err as Error).message}`);
      }
      messages.push({
        endpoint: `${origin}/push/${id}`,
        text,
        headers: {
          ttl: String(req.headers.ttl ?? ''),
          urgency: String(req.headers.urgency ?? ''),
          topic: String(req.headers.topic ?? ''),
          encoding: String(req.headers['content-encoding'] ?? ''),
        },
        vapidKey: checked.key,
        claims: checked.claims,
      });
      res.writeHead(201).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    messages,
    refused,
    subscription() {
      const ecdh = createECDH('prime256v1');
      ecdh.generateKeys();
      const auth = b64u(randomBytes(16));
      const id = b64u(randomBytes(9));
      subscribers.set(id, { ecdh, auth });
      return {
        endpoint: `${origin}/push/${id}`,
        keys: { p256dh: b64u(ecdh.getPublicKey()), auth },
      };
    },
    close: () => new Promise((r) => server.close(() => r())),
  };
}
