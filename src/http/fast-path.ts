/**
 * Answers ahead of Express what needs no framework: the probes (`GET /healthz`, `/readyz`) and a
 * purchase of a product this process already knows is sold out (`POST /seckill`, no
 * Idempotency-Key). After a sell-out nearly every request of a flash crowd is such a refusal;
 * here it costs a small body read, one JSON.parse and one map lookup instead of Express's
 * middleware stack. Everything else goes to Express untouched, or, when the body was read, with
 * it (body.ts PRE_READ), so Express answers exactly as it would have.
 *
 * The answers are Express's own, byte for byte but for the request id: the same problem document
 * (problemDocument), the same headers (X-Request-Id, Content-Type, the problem's headers), the same
 * metrics and access summary; test/fast-path.test.ts sends the same requests both ways and
 * compares them. Identity, rate limits and sale tokens do not apply to a sold-out refusal on
 * either path (shop.ts asks "known sold out?" first): it reveals nothing GET /products/:id does
 * not, and a bot hammering a sold-out product costs nothing to refuse (it is counted in
 * http_problems_total{code="sold-out"}); a product still on sale goes through every check.
 * FAST_PATH=false turns it off.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { ProblemError } from '../errors.js';
import type { SaleError } from '../inventory/index.js';
import type { HttpMetrics } from '../metrics.js';
import { PRE_READ, type PreReadRequest } from './body.js';
import { readyAnswer, type Readiness } from './health.js';
import type { Inflight } from './inflight.js';
import { problemDocument, PROBLEM_JSON } from './problem.js';
import { REQUEST_ID, type AccessLog } from './request-context.js';
import { saleProblem } from './sale-problems.js';
import { purchaseBody } from './shop.js';

export interface FastPathDeps {
  /** the refusal this process knows for a product without asking Redis (sold out), if any */
  refusal(productId: string): SaleError | undefined;
  readiness: Readiness;
  inflight?: Inflight | undefined;
  metrics: HttpMetrics;
  access: AccessLog;
}

/** Bodies the fast path reads: a purchase is ~40 bytes; anything larger goes to Express unread. */
const MAX_BODY = 1_024;
/** Only these media types are read here (what the body parser accepts without a charset question). */
const JSON_TYPE = /^application\/json(?:;\s*charset=utf-8)?$/i;
const JSON_UTF8 = 'application/json; charset=utf-8';
const PROBLEM_UTF8 = `${PROBLEM_JSON}; charset=utf-8`;
const HEALTHY = JSON.stringify({ status: 'ok' });

function requestIdOf(req: IncomingMessage): string {
  const given = req.headers['x-request-id'];
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
}

/** A purchase whose body is small, JSON, not encoded, unkeyed: worth reading here. */
function readable(req: IncomingMessage): number {
  const h = req.headers;
  if (h['idempotency-key'] !== undefined || h['transfer-encoding'] !== undefined) return 0;
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
    a: {
      status: number;
      type: string;
      body: string;
      headers?: Record<string, string>;
      problem?: string;
    },
  ) => {
    res.setHeader('x-request-id', id);
    if (a.headers) for (const k in a.headers) res.setHeader(k, a.headers[k]!);
    res.statusCode = a.status;
    res.setHeader('Content-Type', a.type);
    res.end(a.body);
    const ms = performance.now() - started;
    deps.metrics.observe(req.method!, route, a.status, ms / 1_000, a.problem);
    if (route === '/seckill') deps.access.record(route, a.status, ms);
  };
  const problem = (url: string, id: string, p: ProblemError) => ({
    status: p.status,
    type: PROBLEM_UTF8,
    headers: p.headers,
    body: JSON.stringify(problemDocument(url, id, p)),
    problem: p.code,
  });

  async function probe(req: IncomingMessage, res: ServerResponse, url: '/healthz' | '/readyz') {
    const started = performance.now();
    const id = requestIdOf(req);
    if (url === '/healthz') {
      return send(req, res, started, id, url, { status: 200, type: JSON_UTF8, body: HEALTHY });
    }
    const ready = await readyAnswer(deps.readiness);
    send(
      req,
      res,
      started,
      id,
      url,
      ready instanceof ProblemError
        ? problem(url, id, ready)
        : { status: 200, type: JSON_UTF8, body: JSON.stringify(ready) },
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
    if (parsed !== undefined && !deps.inflight?.full) {
      const body = purchaseBody.safeParse(parsed);
      const refused =
        body.success && body.data.userId === undefined
          ? deps.refusal(body.data.productId)
          : undefined;
      if (refused) {
        const id = requestIdOf(req);
        return send(
          req,
          res,
          started,
          id,
          '/seckill',
          problem('/seckill', id, saleProblem(refused)),
        );
      }
    }
    (req as PreReadRequest)[PRE_READ] = { raw, ...(parsed !== undefined && { body: parsed }) };
    next(req, res);
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
