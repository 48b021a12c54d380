/**
 * RFC 9457 problem details: the single error middleware, the 404 fallback, and the mapping of
 * body-parser failures to clear 4xx answers (never a 5xx for bad input).
 */
import type { ErrorRequestHandler, Request, RequestHandler, Response } from 'express';
import { messageOf, ProblemError, problemType } from '../errors.js';
import { shardDown, storeFull, storeOutage } from '../outages.js';
import type { Logger } from '../log.js';

export const PROBLEM_JSON = 'application/problem+json';

/** The problem+json document of `p` for this request. */
export function problemBody(req: Request, problem: ProblemError): Record<string, unknown> {
  return problemDocument(req.originalUrl, req.id, problem);
}

/** The same document from the bare request URL and id (the fast path has no Express request). */
export function problemDocument(
  url: string,
  requestId: string,
  problem: ProblemError,
): Record<string, unknown> {
  return {
    type: problemType(problem.code),
    title: problem.title,
    status: problem.status,
    ...(problem.detail !== undefined && { detail: problem.detail }),
    instance: url,
    requestId,
    ...problem.extensions,
  };
}

export function sendProblem(req: Request, res: Response, error: ProblemError): void {
  res.locals.problem = error.code; // counted by code (http_problems_total)
  for (const [k, v] of Object.entries(error.headers)) res.setHeader(k, v);
  res
    .status(error.status)
    .type(PROBLEM_JSON)
    .send(JSON.stringify(problemBody(req, error)));
}

/** body-parser / raw-body errors carry a `type`; each is the client's fault. */
const BODY_ERRORS: Record<string, { status: number; code: string; title: string }> = {
  'entity.parse.failed': { status: 400, code: 'malformed-json', title: 'Malformed JSON body' },
  'entity.too.large': { status: 413, code: 'body-too-large', title: 'Request body too large' },
  'encoding.unsupported': {
    status: 415,
    code: 'unsupported-encoding',
    title: 'Unsupported content encoding',
  },
  'charset.unsupported': { status: 415, code: 'unsupported-charset', title: 'Unsupported charset' },
  'request.aborted': { status: 400, code: 'request-aborted', title: 'Request aborted' },
  'request.size.invalid': { status: 400, code: 'bad-content-length', title: 'Bad Content-Length' },
  'stream.encoding.set': { status: 400, code: 'bad-request', title: 'Bad request' },
};

interface HttpLikeError {
  type?: string;
  status?: number;
  statusCode?: number;
  expose?: boolean;
  message?: string;
}

/** A store (Redis, PostgreSQL) away or slow: the client may retry. */
export function storeUnavailable(cause: unknown): ProblemError {
  return new ProblemError({
    status: 503,
    code: 'store-unavailable',
    title: 'Store unavailable, try again',
    detail: 'a store this request needs did not answer; retry in a moment',
    headers: { 'Retry-After': '1' },
    cause,
  });
}

/**
 * Redis past its maxmemory refused a write that is not the sale's (seeding, reconciling, a drop's
 * control): the store is up, the request may come back once memory frees
 * (docs/catalogue.md#redis-memory).
 */
function storeAtItsLimit(cause: unknown): ProblemError {
  return new ProblemError({
    status: 503,
    code: 'store-unavailable',
    title: 'Store unavailable, try again',
    detail: "Redis is at its memory limit and refused this request's writes; retry later",
    headers: { 'Retry-After': '30' },
    cause,
  });
}

/**
 * A command refused unsent because its Redis shard failed a moment ago: nothing ran, the rest of
 * the store is serving, the client may retry (as the sale's own shard-unavailable refusal).
 */
function shardUnavailable(cause: unknown): ProblemError {
  return new ProblemError({
    status: 503,
    code: 'shard-unavailable',
    title: 'Part of the inventory store is unavailable, try again',
    detail:
      'a Redis shard this request needs is not answering; nothing was done: retry in a moment',
    headers: { 'Retry-After': '1' },
    cause,
  });
}

/**
 * Turns anything thrown into a ProblemError: a store outage becomes a 503, other unknown errors
 * an opaque 500.
 */
export function toProblem(err: unknown): ProblemError {
  if (err instanceof ProblemError) return err;
  if (shardDown(err)) return shardUnavailable(err);
  if (storeOutage(err)) return storeUnavailable(err);
  if (storeFull(err)) return storeAtItsLimit(err);
  const e = (err ?? {}) as HttpLikeError;
  const known = e.type ? BODY_ERRORS[e.type] : undefined;
  if (known) return new ProblemError({ ...known, detail: e.message, cause: err });
  const status = e.status ?? e.statusCode;
  if (status && status >= 400 && status < 500) {
    return new ProblemError({
      status,
      code: 'bad-request',
      title: 'Bad request',
      detail: e.expose ? e.message : undefined,
      cause: err,
    });
  }
  return new ProblemError({
    status: 500,
    code: 'internal',
    title: 'Internal server error',
    detail: 'The error was logged with this request id.',
    cause: err,
  });
}

/** A whole answer, for a writer without Express (fast-path.ts) or with it (shop.ts). */
export interface HttpAnswer {
  status: number;
  /** the media type; the writer adds `; charset=utf-8` */
  contentType: string;
  headers: Record<string, string>;
  body: string;
  /** the problem's code, counted in http_problems_total */
  problem?: string;
}

/** The answer of problem `p` to the request at `url`. */
export function problemAnswer(url: string, requestId: string, error: ProblemError): HttpAnswer {
  return {
    status: error.status,
    contentType: PROBLEM_JSON,
    headers: error.headers,
    body: problemJson(url, requestId, error),
    problem: error.code,
  };
}

/** Stands for the request id while a document is split around it (JSON escapes it: never sent). */
const PLACEHOLDER = '\u0000requestId\u0000';
const PLACEHOLDER_JSON = JSON.stringify(PLACEHOLDER);

/** A problem document's JSON before and after its request id, for the last `url` it answered. */
interface SplitDocument {
  url: string;
  head: string;
  tail: string;
}
const split = new WeakMap<ProblemError, SplitDocument | { url: string; head?: undefined }>();

/**
 * JSON.stringify(problemDocument(url, requestId, error)), byte for byte, without making the
 * document again for each request: a problem answered often (sold out, one per product) keeps its
 * JSON around the request id, which alone differs. One URL per problem is kept (the one answered
 * last), so a client's query strings cannot grow it.
 */
function problemJson(url: string, requestId: string, error: ProblemError): string {
  let s = split.get(error);
  if (s?.url !== url) {
    const json = JSON.stringify(problemDocument(url, PLACEHOLDER, error));
    const at = json.indexOf(PLACEHOLDER_JSON);
    // the placeholder once, as the request id (an extension could shadow it): else no shortcut
    const once = at >= 0 && json.indexOf(PLACEHOLDER_JSON, at + 1) < 0;
    s = once
      ? { url, head: json.slice(0, at), tail: json.slice(at + PLACEHOLDER_JSON.length) }
      : { url };
    split.set(error, s);
  }
  return s.head === undefined
    ? JSON.stringify(problemDocument(url, requestId, error))
    : s.head + JSON.stringify(requestId) + s.tail;
}

interface RequestFacts {
  requestId: string;
  method: string;
  url: string;
}

/** What the log says of a problem answered: a bug in full, an outage in one line, a 4xx nothing. */
function logProblem(
  logger: Logger,
  problem: ProblemError,
  err: unknown,
  facts: RequestFacts,
): void {
  if (problem.code === 'internal') {
    logger.error(
      { err, requestId: facts.requestId, method: facts.method, url: facts.url },
      'request failed',
    );
  } else if (problem.status >= 500) {
    // A deliberate 503 (not ready, store unavailable) is an outage, not a bug: one line,
    // no stack, so a probe every second or a burst of shoppers does not bury the log.
    const c = problem.cause;
    const cause =
      c === undefined ? undefined : `${c instanceof Error ? `${c.name}: ` : ''}${messageOf(c)}`;
    logger.warn(
      { requestId: facts.requestId, problem: problem.code, detail: problem.detail, cause },
      'request refused',
    );
  }
}

/** Anything thrown, answered and logged as the error handler does (for a caller without Express). */
export function errorAnswer(logger: Logger, err: unknown, request: RequestFacts): HttpAnswer {
  const problem = toProblem(err);
  logProblem(logger, problem, err, request);
  return problemAnswer(request.url, request.requestId, problem);
}

export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (err, req, res, next) => {
    const problem = toProblem(err);
    logProblem(logger, problem, err, {
      requestId: req.id,
      method: req.method,
      url: req.originalUrl,
    });
    if (res.headersSent) return next(err);
    sendProblem(req, res, problem);
  };
}

export const notFound: RequestHandler = (req, _res, next) => {
  next(
    new ProblemError({
      status: 404,
      code: 'not-found',
      title: 'Not found',
      detail: `No route for ${req.method} ${req.path}`,
    }),
  );
};
