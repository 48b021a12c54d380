/**
 * A TCP proxy in front of a real Redis that can lose a reply: armed with a predicate, it drops the
 * reply to the next command that matches (the command was delivered and ran; its answer never
 * comes back). Commands and replies are counted as RESP elements on each connection, so exactly
 * that command's reply is dropped even when other commands are in flight on the same connection
 * (dropping "the next chunk" once lost another command's reply on a busy machine). Everything
 * else passes through unchanged.
 */
import { createServer, connect, type Socket } from 'node:net';
import { freePort } from './ports.js';

export interface ReplyLosingProxy {
  url: string;
  port: number;
  /**
   * The reply to the next command matching `match` is lost (once); with `thenClose`, the
   * client's connection is closed right after (the command ran, the connection died).
   */
  loseReplyTo(
    match: (command: string) => boolean,
    opts?: {
      thenClose?: boolean;
      /**
       * The reply is a push (RESP3: what SSUBSCRIBE is confirmed by): the next push after the
       * command is the one lost (for a connection that hears nothing else meanwhile).
       */
      push?: boolean;
    },
  ): void;
  /** How many replies it has lost so far. */
  readonly lost: number;
  close(): Promise<void>;
}

const CRLF = Buffer.from('\r\n');

/**
 * The end of the RESP (2 or 3) element starting at `at` in `buf`, or -1 while it is incomplete.
 * An attribute (`|`) is counted with the element it annotates.
 */
export function respEnd(buf: Buffer, at: number): number {
  if (at >= buf.length) return -1;
  const type = String.fromCharCode(buf[at]!);
  const lineEnd = buf.indexOf(CRLF, at);
  if (lineEnd < 0) return -1;
  let pos = lineEnd + 2;
  const n = Number(buf.toString('latin1', at + 1, lineEnd));
  switch (type) {
    case '+':
    case '-':
    case ':':
    case '_':
    case ',':
    case '#':
    case '(':
      return pos;
    case '$':
    case '!':
    case '=':
      if (n < 0) return pos;
      return buf.length < pos + n + 2 ? -1 : pos + n + 2;
    case '*':
    case '~':
    case '>':
    case '%':
    case '|': {
      if (n < 0) return pos;
      const items = type === '%' || type === '|' ? 2 * n : n;
      for (let i = 0; i < items; i++) {
        pos = respEnd(buf, pos);
        if (pos < 0) return -1;
      }
      return type === '|' ? respEnd(buf, pos) : pos;
    }
    default:
      throw new Error(`not RESP at byte ${at}: ${JSON.stringify(type)}`);
  }
}

export async function replyLosingProxy(targetPort: number): Promise<ReplyLosingProxy> {
  const port = await freePort();
  let armed: ((command: string) => boolean) | undefined;
  let closeAfterLoss = false;
  let losePush = false;
  let lost = 0;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(targetPort, '127.0.0.1');
    sockets.add(client).add(upstream);
    let requests: Buffer = Buffer.alloc(0);
    let replies: Buffer = Buffer.alloc(0);
    let sent = 0; // commands seen from the client
    let answered = 0; // replies seen from the server (pushes are not replies)
    const doomed = new Set<number>(); // indexes of commands whose reply is dropped
    let doomedPushes = 0; // pushes to drop (the confirmation of a matched subscription)
    client.on('data', (chunk: Buffer) => {
      upstream.write(chunk);
      requests = requests.length ? Buffer.concat([requests, chunk]) : chunk;
      for (let end; (end = respEnd(requests, 0)) > 0; requests = requests.subarray(end)) {
        if (armed && armed(requests.toString('latin1', 0, end))) {
          armed = undefined;
          if (losePush) doomedPushes++;
          else doomed.add(sent);
        }
        sent++;
      }
    });
    upstream.on('data', (chunk: Buffer) => {
      replies = replies.length ? Buffer.concat([replies, chunk]) : chunk;
      for (let end; (end = respEnd(replies, 0)) > 0; replies = replies.subarray(end)) {
        const push = replies[0] === 0x3e; /* '>' */
        if (push && doomedPushes === 0) {
          client.write(replies.subarray(0, end));
          continue;
        }
        if (push) doomedPushes--;
        if (push || doomed.delete(answered++)) {
          lost++;
          if (closeAfterLoss) {
            client.destroy();
            return;
          }
          continue;
        }
        client.write(replies.subarray(0, end));
      }
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
      losePush = opts.push ?? false;
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
