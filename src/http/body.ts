/**
 * JSON request bodies, in one middleware: a body that is not JSON is a 415 (before the parser
 * would skip it), then express.json (strict, bounded by BODY_LIMIT_BYTES). Its failures become
 * clear 4xx problems in problem.ts.
 */
import express, { type RequestHandler } from 'express';
import { ProblemError } from '../errors.js';

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);
const JSON_TYPES = ['application/json', 'application/*+json'];

export function jsonBody(limitBytes: number): RequestHandler {
  const parse = express.json({ limit: limitBytes, strict: true, type: JSON_TYPES });
  return (req, res, next) => {
    if (!BODY_METHODS.has(req.method)) return next();
    const hasBody =
      req.headers['transfer-encoding'] !== undefined ||
      Number(req.headers['content-length'] ?? 0) > 0;
    if (hasBody && !req.is(JSON_TYPES)) {
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
