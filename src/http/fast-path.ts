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
 * Express sheds the excess as before.
 *
 * The answers are Express's own, byte for byte but for the ids: the same headers (X-Request-Id,
 * Content-Type, the problem's and the rate limits' headers), the same metrics, access summary and
 * log lines; test/fast-path.test.ts sends the same requests both ways and compares them.
 * FAST_PATH=false turns it off.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { ProblemError } from '../errors.js';
import type { Logger } from '../log.js';
import type { HttpMetrics } from '../metrics.js';
import { PRE_READ, type PreReadRequest } from './body.js';
import { readyAnswer, type Readiness } from './health.js';
import type { Inflight } from './inflight.js';
import { problemAnswer, type HttpAnswer } from './problem.js';
import { REQUEST_ID, type AccessLog } from './request-context.js';
import type { Seckill } from './seckill.js';

export interface FastPathDeps {
  /** POST /seckill's answer (seckill.ts, as Express's route) */
  seckill: Seckill;
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

function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.once('end', () => resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)));
    // the client went away mid-body: nothing to answer
    req.once('error', () => resolve(undefined));
  });
}

export function fastPath(deps: FastPathDeps, next: RequestListener): RequestListener {
  const send = (
    req: IncomingMessage,
    res: ServerResponse,
    started: number,
    id: string,
    route: string,
    answer: HttpAnswer,
  ) => {
    res.setHeader('x-request-id', id);
    for (const k in answer.headers) res.setHeader(k, answer.headers[k]!);
    res.statusCode = answer.status;
    res.setHeader('Content-Type', `${answer.contentType}; charset=utf-8`);
    // set here, as Express's send() does, so the headers come in the same order on every path
    res.setHeader('Content-Length', Buffer.byteLength(answer.body));
    res.end(answer.body);
    const ms = performance.now() - started;
    deps.metrics.observe(req.method!, route, answer.status, ms / 1_000, answer.problem);
    if (route !== '/seckill') return; // the probes: counted, not summarised (as on Express)
    deps.access.record(route, answer.status, ms);
    if (answer.status >= 400 && answer.status < 500 && deps.logger.isLevelEnabled('debug')) {
      deps.logger.debug(
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

  async function purchase(req: IncomingMessage, res: ServerResponse) {
    const started = performance.now();
    const raw = await readBody(req);
    if (raw === undefined) return void res.destroy();
    let parsed: unknown;
    try {
      const text = raw.toString('utf8');
      // the body parser is strict: only an object or an array; an array is not a purchase
      if (/^\s*\{/.test(text)) parsed = JSON.parse(text);
    } catch {
      parsed = undefined; // malformed: Express's parser says how
    }
    const inflight = deps.inflight;
    if (parsed === undefined || inflight?.full) {
      (req as PreReadRequest)[PRE_READ] = { raw, ...(parsed !== undefined && { body: parsed }) };
      return next(req, res);
    }
    if (inflight && inflight.cap > 0) {
      inflight.count++;
      // 'close' comes once per response, finished or aborted (as inflight.ts counts)
      res.once('close', () => inflight.count--);
    }
    const id = requestIdOf(req);
    const answer = await deps.seckill({
      url: '/seckill',
      requestId: id,
      headers: req.headers,
      ip: () => deps.clientIp(req),
      body: parsed,
    });
    send(req, res, started, id, '/seckill', answer);
  }

  return (req, res) => {
    const url = req.url;
    if (req.method === 'GET' && (url === '/healthz' || url === '/readyz')) {
      return void probe(req, res, url).catch(() => next(req, res));
    }
    if (req.method === 'POST' && url === '/seckill' && readable(req) > 0) {
      return void purchase(req, res).catch(() => res.destroy());
    }
    next(req, res);
  };
}
