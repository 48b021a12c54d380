import { createServer } from 'node:http';
import { Webhook } from 'standardwebhooks';

const wh = new Webhook(process.env.WEBHOOK_SECRET); // whsec_...
const seen = new Set(); // use a table with a unique key in production

createServer((req, res) => {
  let body = '';
  req.on('data', (chunk) => (body += chunk));
  req.on('end', () => {
    let event;
    try {
      event = wh.verify(body, req.headers); // the signature, and a timestamp within 5 min
    } catch {
      return res.writeHead(401).end();
    }
    if (!seen.has(event.id))
      console.log(event.type, event.subject, event.orderversion ?? event.subjectsequence);
    seen.add(event.id); // a redelivery or a replay: the same id, handled once
    res.writeHead(204).end();
  });
}).listen(process.env.PORT ?? 9000);
