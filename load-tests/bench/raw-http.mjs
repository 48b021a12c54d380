// The "raw node:http" floor of `npm run bench`: node's own HTTP server reading a JSON body and
// answering 202 with a small JSON body, no framework, run as its own process like the API.
//   node load-tests/bench/raw-http.mjs <port>
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';

const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    let productId = '';
    try {
      productId = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}').productId ?? '';
    } catch {
      // the anchor answers anything
    }
    res.statusCode = req.url === '/healthz' ? 200 : 202;
    res.setHeader('Content-Type', 'application/json; charset=utf-8');
    res.end(JSON.stringify({ orderId: randomUUID(), status: 'pending', productId, quantity: 1 }));
  });
});
server.listen(Number(process.argv[2]), '127.0.0.1');
process.on('SIGTERM', () => server.close(() => process.exit(0)));
