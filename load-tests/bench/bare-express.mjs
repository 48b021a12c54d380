// The "bare Express" baseline of `npm run bench`: a minimal Express 5 app (express.json and one
// route that answers 202 with a small JSON body), run as its own process like the API.
//   node load-tests/bench/bare-express.mjs <port>
import { randomUUID } from 'node:crypto';
import express from 'express';

const app = express();
app.use(express.json());
app.post('/seckill', (req, res) => {
  res
    .status(202)
    .json({ orderId: randomUUID(), status: 'pending', productId: req.body.productId, quantity: 1 });
});
app.get('/healthz', (_req, res) => {
  res.json({ status: 'ok' });
});
const server = app.listen(Number(process.argv[2]), '127.0.0.1');
process.on('SIGTERM', () => server.close(() => process.exit(0)));
