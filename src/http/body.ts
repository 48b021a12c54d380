/**
 * JSON request bodies, in one middleware: a body that is not JSON is a 415 (before the parser
 * would skip it), then express.json (strict, bounded by BODY_LIMIT_BYTES). Its failures become
 * clear 4xx problems in problem.ts.
 */
import type { IncomingMessage } from 'node:http';
import express, { type RequestHandler } from 'express';
import { ProblemError } from '../errors.js';

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);
/** application/json and application/*+json, with or without parameters (charset). */
const JSON_MEDIA_TYPE = /^application\/(?:[\w.-]+\+)?json\s*(?:;|$)/i;

export type RawBodyRequest = IncomingMessage & { rawBody?: Buffer };

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
    parse(req, res, next);
  };
}
