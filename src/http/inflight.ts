/**
 * Load shedding: at most `cap` requests in flight in this process (MAX_INFLIGHT). Past it a
 * request is answered 503 + Retry-After before its body is read or any store is asked, so an
 * overloaded process sheds the excess instead of slowing every request down until clients time
 * out. The probes and /metrics are mounted before it and never shed.
 */
import type { RequestHandler } from 'express';
import { ProblemError } from '../errors.js';

export function inflightCap(cap: number): RequestHandler {
  let inflight = 0;
  const overloaded = new ProblemError({
    status: 503,
    code: 'overloaded',
    title: 'Too busy',
    detail: `this process is working on ${cap} requests already; retry in a moment`,
    headers: { 'Retry-After': '1' },
  });
  return (_req, res, next) => {
    if (inflight >= cap) return next(overloaded);
    inflight++;
    // 'close' comes once per response, finished or aborted
    res.once('close', () => inflight--);
    next();
  };
}
