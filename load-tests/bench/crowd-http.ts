/**
 * The crowd's HTTP client: node:http over a bounded pool of keep-alive connections, so tens of
 * thousands of shoppers share a few hundred sockets as behind a real load balancer (fetch's pool
 * has no bound per origin: 50,000 shoppers polling at once opened as many sockets and ran the
 * machine out of ephemeral ports).
 */
import { Agent, request } from 'node:http';

export interface Answer {
  status: number;
  text: string;
  headers: Record<string, string | string[] | undefined>;
}

export function crowdClient(base: string, sockets = 256) {
  const agent = new Agent({ keepAlive: true, maxSockets: sockets, maxFreeSockets: sockets });
  const url = new URL(base);
  const send = (
    method: string,
    path: string,
    headers: Record<string, string>,
    body?: string,
  ): Promise<Answer> =>
    new Promise((resolve, reject) => {
      const req = request(
        {
          agent,
          host: url.hostname,
          port: url.port,
          method,
          path,
          headers:
            body === undefined
              ? headers
              : { ...headers, 'content-length': Buffer.byteLength(body) },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              text: Buffer.concat(chunks).toString('utf8'),
              headers: res.headers,
            }),
          );
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  return { send, close: () => agent.destroy() };
}
