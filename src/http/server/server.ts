/**
 * The API's HTTP server and what bounds a slow client. HTTP_REQUEST_TIMEOUT_MS: a request's
 * headers and body must arrive within it (node's requestTimeout, enforced by node's one sweep
 * every second at most: no timer per request), else 408 and the connection is closed. And a
 * bound on the request bodies one client address may hold half-sent (MAX_UNREAD_BODIES_PER_ADDRESS):
 * a slow body costs a socket and a parser until HTTP_REQUEST_TIMEOUT_MS ends it, so one address
 * may not open thousands of them. Past the bound the address's oldest half-sent body is ended
 * (408), and the new request served. Counted from the request's headers to the end of its body (or
 * its close, for a body nobody reads): a purchase's body arrives with its headers, so a client's
 * count stays near zero however many requests it sends. The address is the socket's peer, not
 * X-Forwarded-For (a proxy that streams slow bodies through is one address: raise the bound).
 */
import {
  createServer,
  type IncomingMessage,
  type RequestListener,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { Duplex } from 'node:stream';
import { problemType } from '../../errors.js';
import { PROBLEM_JSON } from '../problem.js';

const hasBody = (req: IncomingMessage) =>
  req.headers['transfer-encoding'] !== undefined ||
  (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0');

/** `next`, behind the bound of `limit` unread bodies per address (0: no bound). */
export function unreadBodiesPerAddress(limit: number, next: RequestListener): RequestListener {
  if (limit <= 0) return next;
  // per address, its requests whose body is still arriving, oldest first (a Map keeps that order)
  const open = new Map<string, Map<IncomingMessage, ServerResponse>>();
  const bounded: RequestListener = (req, res) => {
    if (req.complete || !hasBody(req)) return next(req, res);
    const address = req.socket.remoteAddress ?? '';
    let held = open.get(address);
    if (!held) open.set(address, (held = new Map()));
    const mine = held;
    const release = (which: IncomingMessage) => {
      if (mine.delete(which) && mine.size === 0 && open.get(address) === mine) {
        open.delete(address);
      }
    };
    mine.set(req, res);
    req.once('end', () => release(req));
    req.once('close', () => release(req));
    // Past the bound the address's OLDEST half-sent body goes, not the new request: a request
    // whose body comes with its headers is counted for a moment (node dispatches it before its
    // body is parsed), and must still be served: refusing the newest would close every purchase
    // of an address unanswered while it holds the bound's worth of slow bodies.
    if (mine.size > limit) {
      const [oldest, itsAnswer] = mine.entries().next().value!;
      release(oldest);
      evict(oldest, itsAnswer, limit);
    }
    next(req, res);
  };
  // the listener it guards stays reachable (the OpenAPI test walks Express's router)
  return Object.assign(bounded, { inner: next });
}

/** Ends a half-sent request with a 408 problem+json (when its answer has not begun), and its connection. */
function evict(req: IncomingMessage, res: ServerResponse, limit: number): void {
  const body = JSON.stringify({
    type: problemType('request-timeout'),
    title: 'The request body did not arrive in time',
    status: 408,
    detail: `this address has more than ${limit} request bodies half-sent (MAX_UNREAD_BODIES_PER_ADDRESS): the oldest is ended`,
  });
  if (res.headersSent) return void req.socket.destroy();
  res.shouldKeepAlive = false;
  res.writeHead(408, {
    'Content-Type': PROBLEM_JSON,
    'Content-Length': Buffer.byteLength(body),
    Connection: 'close',
  });
  res.end(body, () => req.socket.destroy());
}

/**
 * What node's parser refuses before any handler sees a request, by node's error code; node's own
 * answers are bare status lines, these the problem+json every other refusal is (bad input: 4xx).
 */
const CLIENT_ERRORS: Record<
  string,
  { status: number; reason: string; code: string; title: string }
> = {
  ERR_HTTP_REQUEST_TIMEOUT: {
    status: 408,
    reason: 'Request Timeout',
    code: 'request-timeout',
    title: 'The request did not arrive within HTTP_REQUEST_TIMEOUT_MS',
  },
  HPE_HEADER_OVERFLOW: {
    status: 431,
    reason: 'Request Header Fields Too Large',
    code: 'headers-too-large',
    title: 'Request headers too large',
  },
  HPE_CHUNK_EXTENSIONS_OVERFLOW: {
    status: 413,
    reason: 'Payload Too Large',
    code: 'chunk-extensions-too-large',
    title: 'Chunk extensions too large',
  },
};
const MALFORMED = {
  status: 400,
  reason: 'Bad Request',
  code: 'malformed-request',
  title: 'Malformed HTTP request',
};

/** node's default clientError answer (status by error code), as problem+json; then close. */
export function answerClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  // As node's own answer does: only while no answer of the request at hand has begun. A
  // connection that answered earlier requests (keep-alive, pipelined), or sent `100 Continue` for
  // this one, has written bytes, but none of this request's answer: it gets its 408 too.
  const inFlight = (socket as Duplex & { _httpMessage?: { headersSent: boolean } | null })
    ._httpMessage;
  const unanswered = !inFlight || !inFlight.headersSent;
  if (err.code !== 'ECONNRESET' && socket.writable && unanswered) {
    const known = CLIENT_ERRORS[err.code ?? ''] ?? MALFORMED;
    const body = JSON.stringify({
      type: problemType(known.code),
      title: known.title,
      status: known.status,
    });
    socket.write(
      `HTTP/1.1 ${known.status} ${known.reason}\r\nContent-Type: ${PROBLEM_JSON}\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(err);
}

/** The API's server over `handler`, with the bounds above (not yet listening). */
export function createApiServer(
  handler: RequestListener,
  opts: { requestTimeoutMs: number; maxUnreadBodiesPerAddress: number },
): Server {
  const server = createServer(
    {
      requestTimeout: opts.requestTimeoutMs,
      headersTimeout: Math.min(66_000, opts.requestTimeoutMs),
      connectionsCheckingInterval: Math.min(1_000, opts.requestTimeoutMs),
    },
    unreadBodiesPerAddress(opts.maxUnreadBodiesPerAddress, handler),
  );
  server.on('clientError', answerClientError);
  // Keep-alive must outlive the load balancer's idle timeout.
  server.keepAliveTimeout = 65_000;
  return server;
}
