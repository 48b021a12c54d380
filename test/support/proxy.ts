/**
 * A TCP proxy in front of a real server that can lose a reply: armed with a predicate, it drops
 * the next server-to-client chunk after a client chunk that matches (the command was delivered
 * and ran; its answer never comes back). Everything else passes through unchanged.
 */
import { createServer, connect, type Socket } from 'node:net';
import { freePort } from './ports.js';

export interface ReplyLosingProxy {
  url: string;
  port: number;
  /**
   * The reply to the next client chunk matching `match` is lost (once); with `thenClose`, the
   * client's connection is closed right after (the command ran, the connection died).
   */
  loseReplyTo(match: (clientChunk: string) => boolean, opts?: { thenClose?: boolean }): void;
  /** How many replies it has lost so far. */
  readonly lost: number;
  close(): Promise<void>;
}

export async function replyLosingProxy(targetPort: number): Promise<ReplyLosingProxy> {
  const port = await freePort();
  let armed: ((chunk: string) => boolean) | undefined;
  let closeAfterLoss = false;
  let lost = 0;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(targetPort, '127.0.0.1');
    sockets.add(client).add(upstream);
    let dropNext = false;
    client.on('data', (chunk) => {
      if (armed && armed(chunk.toString('latin1'))) {
        armed = undefined;
        dropNext = true;
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      if (dropNext) {
        dropNext = false;
        lost++;
        if (closeAfterLoss) client.destroy();
        return;
      }
      client.write(chunk);
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    loseReplyTo(match, opts = {}) {
      armed = match;
      closeAfterLoss = opts.thenClose ?? false;
    },
    get lost() {
      return lost;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
