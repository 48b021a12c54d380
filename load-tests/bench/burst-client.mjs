// A burst of shoppers for bench:burst, in a process of its own (so the probes' timings are not
// this loop's): `node burst-client.mjs <port> <productId> <connections> <label>` opens every
// connection at once, each with one POST /seckill, and prints {"answered":n,"statuses":{...}}
// once all are answered (or after 60 s).
import { connect } from 'node:net';

const [port, productId, count, label] = process.argv.slice(2);
const n = Number(count);
const statuses = {};
let answered = 0;
const body = JSON.stringify({ productId });
const done = new Promise((resolve) => {
  const timer = setTimeout(resolve, 60_000);
  const settle = () => ++answered === n && (clearTimeout(timer), resolve());
  for (let i = 0; i < n; i++) {
    const s = connect(Number(port), '127.0.0.1');
    let got = false;
    const finish = (status) => {
      if (got) return;
      got = true;
      statuses[status] = (statuses[status] ?? 0) + 1;
      s.destroy();
      settle();
    };
    s.on('connect', () =>
      s.write(
        `POST /seckill HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n` +
          `x-user-id: ${label}-${i}\r\ncontent-length: ${body.length}\r\n\r\n${body}`,
      ),
    );
    s.on('data', (d) => finish(String(d).split(' ')[1]));
    s.on('error', () => finish('error'));
  }
});
await done;
process.stdout.write(`${JSON.stringify({ answered, statuses })}\n`);
process.exit(0);
