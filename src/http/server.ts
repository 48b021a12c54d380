/**
 * The API's HTTP server and what bounds a slow client. HTTP_REQUEST_TIMEOUT_MS: a request's
 * headers and body must arrive within it (node's requestTimeout, enforced by node's one sweep
 * every second at most: no timer per request), else 408 and the connection is closed. And a
 * bound on the request bodies one client address may hold half-sent (MAX_UNREAD_BODIES_PER_ADDRESS):
 * a slow body costs a socket and a parser until HTTP_REQUEST_TIMEOUT_MS ends it, so one address
 * may not open thousands of them. Past the bound the new request's connection is closed before
 * anything reads it. Counted from the request's headers to the end of its body (or its close, for
 * a body nobody reads): a purchase's body arrives with its headers, so a client's count stays
 * near zero however many requests it sends. The address is the socket's peer, not
 * X-Forwarded-For (a proxy that streams slow bodies through is one address: raise the bound).
 */
import { createServer, type IncomingMessage, type RequestListener, type Server } from 'node:http';

const hasBody = (req: IncomingMessage) =>
  req.headers['transfer-encoding'] !== undefined ||
  (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0');

/** `next`, behind the bound of `limit` unread bodies per address (0: no bound). */
export function unreadBodiesPerAddress(limit: number, next: RequestListener): RequestListener {
  if (limit <= 0) return next;
  const open = new Map<string, number>();
  const bounded: RequestListener = (req, res) => {
    if (req.complete || !hasBody(req)) return next(req, res);
    const address = req.socket.remoteAddress ?? '';
    const held = (open.get(address) ?? 0) + 1;
    if (held > limit) return void req.socket.destroy();
    open.set(address, held);
    let counted = true;
    const release = () => {
      if (!counted) return;
      counted = false;
      const left = open.get(address)! - 1;
      if (left === 0) open.delete(address);
      else open.set(address, left);
    };
    req.once('end', release);
    req.once('close', release);
    next(req, res);
  };
  // the listener it guards stays reachable (the OpenAPI test walks Express's router)
  return Object.assign(bounded, { inner: next });
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
  // Keep-alive must outlive the load balancer's idle timeout.
  server.keepAliveTimeout = 65_000;
  return server;
}
