/**
 * JSON request bodies, in one middleware: a body that is not JSON is a 415 (before the parser
 * would skip it), then express.json (strict, bounded by BODY_LIMIT_BYTES). Its failures become
 * clear 4xx problems in problem.ts.
 */
import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import express, { type RequestHandler } from 'express';
import { ProblemError } from '../../errors.js';

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);
/** application/json and application/*+json, with or without parameters (charset). */
const JSON_MEDIA_TYPE = /^application\/(?:[\w.-]+\+)?json\s*(?:;|$)/i;

export type RawBodyRequest = IncomingMessage & { rawBody?: Buffer };

/**
 * A body the fast path (fast-path.ts) already read off the socket, handed on with the request:
 * `body` when it parsed it (JSON.parse of an object, as the strict parser would), else only
 * `raw`, which the parser below then reads as it would have read the socket.
 */
export const PRE_READ = Symbol('seckill.preRead');
export type PreReadRequest = IncomingMessage & {
  [PRE_READ]?: { raw: Buffer; body?: unknown };
};

export function jsonBody(limitBytes: number): RequestHandler {
  // The media type is checked here once; the parser need not parse the header again.
  const parse = express.json({
    limit: limitBytes,
    strict: true,
    type: () => true,
    // the bytes as sent: a signed body (the payment webhook) is verified over them, not a re-encoding
    verify: (req, _res, buf) => {
      (req as RawBodyRequest).rawBody = buf;
    },
  });
  return (req, res, next) => {
    if (!BODY_METHODS.has(req.method)) return next();
    const hasBody =
      req.headers['transfer-encoding'] !== undefined ||
      Number(req.headers['content-length'] ?? 0) > 0;
    if (!hasBody) return next();
    if (!JSON_MEDIA_TYPE.test(req.headers['content-type'] ?? '')) {
      return next(
        new ProblemError({
          status: 415,
          code: 'unsupported-media-type',
          title: 'Unsupported media type',
          detail: `Send the body as application/json (got ${req.headers['content-type'] ?? 'no Content-Type'})`,
          headers: { 'Accept-Post': 'application/json' },
        }),
      );
    }
    const pre = (req as PreReadRequest)[PRE_READ];
    if (!pre) return parse(req, res, next);
    if (pre.body !== undefined) {
      (req as RawBodyRequest).rawBody = pre.raw;
      (req as IncomingMessage & { body?: unknown }).body = pre.body;
      return next();
    }
    // the same parser over the bytes read: the same answers (malformed JSON, too large, ...)
    const replay = Object.assign(Readable.from([pre.raw]), {
      headers: req.headers,
      method: req.method,
    });
    parse(replay as unknown as typeof req, res, (err?: unknown) => {
      (req as RawBodyRequest).rawBody = (replay as unknown as RawBodyRequest).rawBody;
      (req as IncomingMessage & { body?: unknown }).body = (replay as { body?: unknown }).body;
      next(err);
    });
  };
}
