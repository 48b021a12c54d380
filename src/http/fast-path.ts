/**
 * Answers ahead of Express what needs no framework: the probes (`GET /healthz`, `/readyz`) and
 * `POST /seckill` with a small JSON body, the route a flash crowd hammers (in stock, a sale; after
 * the sell-out, nearly every request a refusal). It reads the body (Content-Length <= 1 KiB,
 * application/json, not encoded), parses it as the strict body parser would, and calls the same
 * function Express's route calls (seckill.ts), which answers every outcome, errors included:
 * identity, sale tokens, rate limits, Idempotency-Key and the sale itself apply as on Express.
 * What it saves is Express's middleware stack (~40 us of CPU a request here). Everything else goes
 * to Express untouched, or, when the body was read, with it (body.ts PRE_READ): malformed JSON, a
 * body that is not an object, a chunked, large, encoded or non-JSON body get Express's answers.
 * It counts its purchases in flight with Express's (MAX_INFLIGHT), and at the cap steps aside so
 * Express sheds the excess as before. A refusal known in memory (sold out) is answered in the turn
 * its body ends, without a promise, and counted until its response closes, as Express counts it.
 *
 * The answers are Express's own, byte for byte but for the ids: the same headers (X-Request-Id,
 * Content-Type, the problem's and the rate limits' headers), the same metrics, access summary and
 * log lines; test/http/fast-path.test.ts sends the same requests both ways and compares them.
 * FAST_PATH=false turns it off.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { ProblemError } from '../errors.js';
import type { Logger } from '../log.js';
import type { HttpMetrics } from '../metrics.js';
import { PRE_READ, type PreReadRequest } from './server/body.js';
import type { Cors } from './server/cors.js';
import { readyAnswer, type Readiness } from './routes/health.js';
import type { Inflight } from './server/inflight.js';
import { problemAnswer, type HttpAnswer } from './problem.js';
import { REQUEST_ID, type AccessLog } from './server/request-context.js';
import { PLACE_PATH, type PlacePoll } from './routes/room.js';
import type { Seckill } from './handlers/seckill.js';

export interface FastPathDeps {
  /** POST /seckill's answer (seckill.ts, as Express's route) */
  seckill: Seckill;
  /** GET /products/:id/queue's answer (routes/room.ts, as Express's route): a poll from memory */
  placePoll?: PlacePoll | undefined;
  /** CORS_ORIGINS: every answer annotated, preflights answered here */
  cors?: Cors | undefined;
  /** the client's address, as Express's req.ip reads it (TRUST_PROXY) */
  clientIp(req: IncomingMessage): string;
  logger: Logger;
  readiness: Readiness;
  inflight?: Inflight | undefined;
  metrics: HttpMetrics;
  access: AccessLog;
}

/** Bodies the fast path reads: a purchase is ~40 bytes; anything larger goes to Express unread. */
const MAX_BODY = 1_024;
/** Only these media types are read here (what the body parser accepts without a charset question). */
const JSON_TYPE = /^application\/json(?:;\s*charset=utf-8)?$/i;
const HEALTHY = JSON.stringify({ status: 'ok' });
/** The Content-Type of the media types answered here, made once. */
const CONTENT_TYPES = new Map(
  ['application/json', 'application/problem+json'].map((t) => [t, `${t}; charset=utf-8`]),
);

function requestIdOf(req: IncomingMessage): string {
  const given = req.headers['x-request-id'];
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
}

/** A purchase whose body is small, JSON, not encoded: worth reading here. */
function readable(req: IncomingMessage): number {
  const h = req.headers;
  if (h['transfer-encoding'] !== undefined) return 0;
  const encoding = h['content-encoding'];
  if (encoding !== undefined && encoding.toLowerCase() !== 'identity') return 0;
  if (!JSON_TYPE.test(h['content-type'] ?? '')) return 0;
  const length = Number(h['content-length']);
  return Number.isInteger(length) && length > 0 && length <= MAX_BODY ? length : 0;
}

export function fastPath(deps: FastPathDeps, next: RequestListener): RequestListener {
  const { metrics, access, logger, inflight, cors } = deps;
  const send = (
    req: IncomingMessage,
    res: ServerResponse,
    started: number,
    id: string,
    route: string,
    answer: HttpAnswer,
  ) => {
    // one flat list, in the order Express's path sets them (the contract test compares the order)
    const headers = ['x-request-id', id];
    if (cors) {
      const h = cors.headersOf(req);
      for (let i = 0; i < h.length; i++) headers.push(h[i]!);
    }
    for (const k in answer.headers) headers.push(k, answer.headers[k]!);
    headers.push(
      'Content-Type',
      CONTENT_TYPES.get(answer.contentType) ?? `${answer.contentType}; charset=utf-8`,
      // as Express's send() does
      'Content-Length',
      String(Buffer.byteLength(answer.body)),
    );
    res.writeHead(answer.status, headers);
    res.end(answer.body);
    const ms = performance.now() - started;
    metrics.observe(req.method!, route, answer.status, ms / 1_000, answer.problem);
    if (route !== '/seckill') return; // the probes: counted, not summarised (as on Express)
    access.record(route, answer.status, ms);
    if (answer.status >= 400 && answer.status < 500 && logger.isLevelEnabled('debug')) {
      logger.debug(
        { requestId: id, method: req.method, url: req.url, status: answer.status, ms },
        'request refused',
      );
    }
  };

  async function probe(req: IncomingMessage, res: ServerResponse, url: '/healthz' | '/readyz') {
    const started = performance.now();
    const id = requestIdOf(req);
    if (url === '/healthz') {
      return send(req, res, started, id, url, {
        status: 200,
        contentType: 'application/json',
        headers: {},
        body: HEALTHY,
      });
    }
    const ready = await readyAnswer(deps.readiness);
    send(
      req,
      res,
      started,
      id,
      url,
      ready instanceof ProblemError
        ? problemAnswer(url, id, ready)
        : {
            status: 200,
            contentType: 'application/json',
            headers: {},
            body: JSON.stringify(ready),
          },
    );
  }

  /** A purchase whose body was read: answered here, or handed to Express with its body. */
  function purchase(req: IncomingMessage, res: ServerResponse, started: number, raw: Buffer) {
    let parsed: unknown;
    try {
      const text = raw.toString('utf8');
      // the body parser is strict: only an object or an array; an array is not a purchase
      if (/^\s*\{/.test(text)) parsed = JSON.parse(text);
    } catch {
      parsed = undefined; // malformed: Express's parser says how
    }
    if (parsed === undefined || inflight?.full) {
      (req as PreReadRequest)[PRE_READ] = { raw, ...(parsed !== undefined && { body: parsed }) };
      return next(req, res);
    }
    const id = requestIdOf(req);
    const answer = deps.seckill({
      url: '/seckill',
      requestId: id,
      headers: req.headers,
      ip: () => deps.clientIp(req),
      body: parsed,
    });
    // Counted until its response closes, as Express's cap counts, also when answered in this
    // turn (a sold-out refusal): a pipelined answer waits behind the ones before it, in flight.
    if (inflight && inflight.cap > 0) {
      inflight.count++;
      // 'close' comes once per response, finished or aborted (as inflight.ts counts)
      res.once('close', () => inflight.count--);
    }
    if (!(answer instanceof Promise)) return send(req, res, started, id, '/seckill', answer);
    answer.then((a) => send(req, res, started, id, '/seckill', a)).catch(() => res.destroy());
  }

  /** A waiting room poll: answered here, in this turn when the place is known in memory. */
  function poll(req: IncomingMessage, res: ServerResponse, productId: string) {
    const started = performance.now();
    const id = requestIdOf(req);
    const route = '/products/:id/queue';
    const answer = deps.placePoll!({
      url: req.url!,
      requestId: id,
      headers: req.headers,
      productId,
      ip: () => deps.clientIp(req),
    });
    if (!(answer instanceof Promise)) return send(req, res, started, id, route, answer);
    answer.then((a) => send(req, res, started, id, route, a)).catch(() => res.destroy());
  }

  /** Reads a small body with listeners, not a promise: most come in one chunk. */
  function readPurchase(req: IncomingMessage, res: ServerResponse) {
    const started = performance.now();
    let first: Buffer | undefined;
    let more: Buffer[] | undefined;
    req.on('data', (c: Buffer) => {
      if (first === undefined) first = c;
      else (more ??= [first]).push(c);
    });
    req.on('end', () => {
      try {
        purchase(req, res, started, more ? Buffer.concat(more) : (first ?? Buffer.alloc(0)));
      } catch {
        res.destroy();
      }
    });
    // the client went away mid-body: nothing to answer
    req.once('error', () => res.destroy());
  }

  /** A CORS preflight: answered from the policy's table, whatever the route. */
  function preflight(req: IncomingMessage, res: ServerResponse) {
    const started = performance.now();
    const status = cors!.answerPreflight(req, res, requestIdOf(req));
    metrics.observe('OPTIONS', 'preflight', status, (performance.now() - started) / 1_000);
  }

  return (req, res) => {
    const url = req.url;
    if (cors && req.method === 'OPTIONS' && cors.isPreflight(req)) return preflight(req, res);
    if (req.method === 'GET' && (url === '/healthz' || url === '/readyz')) {
      return void probe(req, res, url).catch(() => next(req, res));
    }
    if (req.method === 'POST' && url === '/seckill' && readable(req) > 0) {
      return readPurchase(req, res);
    }
    const place = req.method === 'GET' && deps.placePoll ? PLACE_PATH.exec(url ?? '') : null;
    if (place) return poll(req, res, place[1]!);
    next(req, res);
  };
}
