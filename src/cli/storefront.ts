/**
 * The storefront example (examples/storefront/) on an origin of its own, as a shop serves its
 * pages: the page, its script and style, where the API is (`storefront-config.json`), and a demo
 * payment provider (`POST /demo-provider/pay`) that charges nothing and tells the API the intent
 * was paid with a signed webhook, as a provider's checkout would. Only `up` runs it (a local
 * demo: whoever reaches it can mark their own order paid).
 */
import { createHmac, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** examples/storefront from src/cli/ (and from dist/src/cli/, the build copies it beside) */
export const STOREFRONT_DIR = join(
  dirname(fileURLToPath(import.meta.url)),
  '..',
  '..',
  'examples',
  'storefront',
);

const FILES: Record<string, { file: string; type: string }> = {
  '/': { file: 'index.html', type: 'text/html' },
  '/index.html': { file: 'index.html', type: 'text/html' },
  '/storefront.js': { file: 'storefront.js', type: 'text/javascript' },
  '/storefront.css': { file: 'storefront.css', type: 'text/css' },
  '/draw.js': { file: 'draw.js', type: 'text/javascript' },
  // a draw's verifier, one file a shopper runs with Node.js alone
  '/verify-draw.mjs': { file: '../verify-draw.mjs', type: 'text/javascript' },
  // the door's challenge and its solver: the queue page's own files
  '/door.js': { file: '../../queue-page/door.js', type: 'text/javascript' },
  '/door-worker.js': { file: '../../queue-page/door-worker.js', type: 'text/javascript' },
};

export interface StorefrontOptions {
  host: string;
  port: number;
  /** the API's base URL, as the page calls it */
  api: string;
  /** the product the page opens on (`?product=` picks another) */
  productId: string;
  /** PAYMENT_WEBHOOK_SECRET: the demo provider signs its notices with it */
  webhookSecret: string;
}

/** A notice the API's webhook takes (Seckill-Signature: t=<s>,v1=<hex HMAC of "t.body">). */
function signed(secret: string, body: string): Record<string, string> {
  const t = Math.floor(Date.now() / 1000);
  const v1 = createHmac('sha256', secret).update(`${t}.${body}`).digest('hex');
  return { 'content-type': 'application/json', 'seckill-signature': `t=${t},v1=${v1}` };
}

const text = (value: unknown, max: number) =>
  typeof value === 'string' && value.length <= max ? value : undefined;

export async function startStorefront(opts: StorefrontOptions): Promise<Server> {
  const files = new Map(
    Object.entries(FILES).map(([path, f]) => [
      path,
      { body: readFileSync(join(STOREFRONT_DIR, f.file)), type: f.type },
    ]),
  );
  const config = JSON.stringify({ api: opts.api, productId: opts.productId });
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    const send = (status: number, type: string, body: string | Buffer) => {
      res.writeHead(status, {
        'content-type': `${type}; charset=utf-8`,
        'cache-control': 'no-store',
      });
      res.end(body);
    };
    if (req.method === 'GET' && path === '/storefront-config.json') {
      return send(200, 'application/json', config);
    }
    const file = req.method === 'GET' ? files.get(path) : undefined;
    if (file) return send(200, file.type, file.body);
    if (req.method !== 'POST' || path !== '/demo-provider/pay') {
      return send(404, 'text/plain', 'not found');
    }
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => {
      raw += c;
      if (raw.length > 4_096) req.destroy();
    });
    req.on('end', () => {
      void (async () => {
        let asked: Record<string, unknown>;
        try {
          asked = JSON.parse(raw) as Record<string, unknown>;
        } catch {
          return send(400, 'application/json', JSON.stringify({ title: 'not JSON' }));
        }
        const orderId = text(asked.orderId, 64);
        const paymentIntentId = text(asked.paymentIntentId, 64);
        if (!orderId || !paymentIntentId) {
          return send(
            400,
            'application/json',
            JSON.stringify({ title: 'orderId, paymentIntentId' }),
          );
        }
        const notice = JSON.stringify({
          type: 'payment.succeeded',
          orderId,
          paymentIntentId,
          paymentId: `demo_${randomBytes(8).toString('hex')}`,
          ...(typeof asked.amount === 'number' && { amount: asked.amount }),
          ...(text(asked.currency, 3) && { currency: asked.currency }),
        });
        const answer = await fetch(`${opts.api}/payments/webhook`, {
          method: 'POST',
          headers: signed(opts.webhookSecret, notice),
          body: notice,
        });
        send(answer.status, 'application/json', await answer.text());
      })().catch((err: unknown) =>
        send(
          502,
          'application/json',
          JSON.stringify({ title: 'the API did not answer', detail: String(err) }),
        ),
      );
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  return server;
}
