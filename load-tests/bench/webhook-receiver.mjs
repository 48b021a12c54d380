// The local webhook receiver of `npm run bench` (the production + webhook row) and
// `npm run bench:events`: answers each order event 204, or 500 to a share of them (--fail-rate),
// or never (--hang: the request is read and left open, as a receiver whose database is stuck),
// verifies the signature when given the secret, and keeps, per event id acknowledged once, the
// delivery lag (arrival minus the event's `time`, its commit).
//   node load-tests/bench/webhook-receiver.mjs <port> [--fail-rate 0.1] [--hang] [--secret whsec_...]
//   GET /stats -> { received, acked, failed, hung, unsigned, first, last, lagsMs: [...] }; POST /reset
// The secret can also be set later: POST /secret with the whsec_ value as the body.
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';
import { Webhook } from 'standardwebhooks';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    'fail-rate': { type: 'string', default: '0' },
    hang: { type: 'boolean', default: false },
    secret: { type: 'string' },
  },
});
const hang = values.hang;
let failRate = Number(values['fail-rate']);
let wh = values.secret ? new Webhook(values.secret) : undefined;
let stats;
const reset = () => {
  stats = { received: 0, acked: 0, failed: 0, hung: 0, unsigned: 0, first: 0, last: 0, lagsMs: [] };
  seen.clear();
};
const seen = new Set();
reset();

const server = createServer((req, res) => {
  let body = '';
  req.on('data', (c) => (body += c));
  req.on('end', () => {
    if (req.method === 'GET' && req.url === '/stats') {
      res.setHeader('content-type', 'application/json');
      return res.end(JSON.stringify(stats));
    }
    if (req.url === '/reset') {
      reset();
      failRate = Number(new URL(req.url, 'http://x').searchParams.get('fail') ?? failRate);
      return res.end();
    }
    if (req.url?.startsWith('/fail-rate/')) {
      failRate = Number(req.url.split('/')[2]);
      return res.end();
    }
    if (req.url === '/secret') {
      wh = new Webhook(body.trim());
      return res.end();
    }
    stats.received++;
    let event;
    try {
      event = wh ? wh.verify(body, req.headers) : JSON.parse(body);
    } catch {
      stats.unsigned++;
      return res.writeHead(401).end();
    }
    if (hang) {
      stats.hung++;
      return; // never answered: the sender's timeout ends it
    }
    if (Math.random() < failRate) {
      stats.failed++;
      return res.writeHead(500).end();
    }
    const now = Date.now();
    if (!seen.has(event.id)) {
      seen.add(event.id);
      stats.acked++;
      stats.first ||= now;
      stats.last = now;
      stats.lagsMs.push(now - Date.parse(event.time));
    }
    res.writeHead(204).end();
  });
});
server.keepAliveTimeout = 60_000;
server.listen(Number(positionals[0]), '127.0.0.1');
process.on('SIGTERM', () => server.close(() => process.exit(0)));
