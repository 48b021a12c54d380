/**
 * Load shedding: at most `cap` requests in flight in this process (MAX_INFLIGHT). A request counts
 * once its body is read (a slow body holds no slot it has not earned: server.ts bounds those).
 * Past it a request is answered 503 + Retry-After before any store is asked, so an
 * overloaded process sheds the excess instead of slowing every request down until clients time
 * out. The probes and /metrics are mounted before it and never shed.
 */
import type { RequestHandler, Response } from 'express';
import { ProblemError } from '../../errors.js';

/** The requests in flight in this process, shared by the cap and the fast path (fast-path.ts). */
export class Inflight {
  count = 0;
  constructor(readonly cap: number) {}
  /** at the cap: a new request would be shed (never when there is no cap) */
  get full(): boolean {
    return this.cap > 0 && this.count >= this.cap;
  }
}

export function inflightCap(inflight: Inflight): RequestHandler {
  const cap = inflight.cap;
  const overloaded = new ProblemError({
    status: 503,
    code: 'overloaded',
    title: 'Too busy',
    detail: `this process is working on ${cap} requests already; retry in a moment`,
    headers: { 'Retry-After': '1' },
  });
  return (_req, res, next) => {
    if (inflight.full) return next(overloaded);
    inflight.count++;
    let held = true;
    const release = () => {
      if (!held) return;
      held = false;
      inflight.count--;
    };
    res.locals[RELEASE] = release;
    // 'close' comes once per response, finished or aborted
    res.once('close', release);
    next();
  };
}

const RELEASE = 'releaseInflight';

/**
 * Gives back the slot of a response that stays open for good once it started (a server-sent
 * event stream): the cap bounds work in progress, and an open stream between snapshots is none
 * (held, a few open dashboards would shed every purchase at a small MAX_INFLIGHT).
 */
export function releaseInflight(res: Response): void {
  (res.locals[RELEASE] as (() => void) | undefined)?.();
}
