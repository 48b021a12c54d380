/**
 * The draw's routes (docs/draw.md): a shopper enters (`POST /products/:id/draw/entry`), withdraws
 * until the close (`DELETE`), reads their entry (`GET`); anyone reads the public transcript
 * (`GET /products/:id/draw`) and the frozen list (`GET /products/:id/draw/entries`, paged as every
 * listing is, or NDJSON).
 */
import type { IRouter, Response } from 'express';
import { z } from 'zod';
import type { Config } from '../../config/index.js';
import { ProblemError } from '../../errors.js';
import { unknownProduct } from '../../inventory/index.js';
import type { DrawEntries, EntryViews, Transcripts } from '../../services/index.js';
import { admissionProblem } from '../admission-problems.js';
import { accountCreatedAt, shopperId } from '../auth.js';
import { rateLimitHeaders } from '../rate-limit-headers.js';
import { saleProblem } from '../sale-problems.js';
import { parseOr400, productIdParam } from '../validation.js';
import { linkNext } from './next-page.js';

/** Retry-After of an entry refused for memory, as a join's. */
const STORE_SHORT_RETRY_S = 30;
/** Ids the NDJSON list reads per query. */
const NDJSON_PART = 10_000;

const entriesQuery = z.strictObject({
  after: z
    .string()
    .regex(/^\d{1,9}$/, 'must be a cursor: the `next` of the page before')
    .optional(),
  limit: z.coerce.number().int().min(1).max(10_000).default(1_000),
  format: z.enum(['json', 'ndjson']).default('json'),
});

type Refusal =
  | { kind: 'unknown-product' }
  | { kind: 'no-draw' }
  | { kind: 'not-entered' }
  | { kind: 'not-open'; opensAt: number }
  | { kind: 'closed'; closedAt: number }
  | { kind: 'full'; maxEntries: number }
  | { kind: 'store-short' }
  | { kind: 'not-frozen' }
  | { kind: 'refused'; refusal: Parameters<typeof admissionProblem>[0] };

function problemOf(answer: Refusal, productId: string): ProblemError {
  switch (answer.kind) {
    case 'refused':
      return admissionProblem(answer.refusal);
    case 'unknown-product':
      return saleProblem(unknownProduct(productId));
    case 'no-draw':
      return new ProblemError({
        status: 404,
        code: 'no-draw',
        title: 'Not sold by a draw',
        detail: 'this product is sold first come: POST /seckill (or its waiting room)',
      });
    case 'not-entered':
      return new ProblemError({
        status: 404,
        code: 'not-entered',
        title: 'No entry',
        detail: 'this shopper holds no entry in this draw: POST this URL to enter',
      });
    case 'not-open':
      return new ProblemError({
        status: 425,
        code: 'entries-not-open',
        title: 'Entries are not open yet',
        detail: `entries open at ${new Date(answer.opensAt).toISOString()}`,
        headers: {
          'Retry-After': String(Math.max(1, Math.ceil((answer.opensAt - Date.now()) / 1_000))),
        },
      });
    case 'closed':
      return new ProblemError({
        status: 409,
        code: 'draw-closed',
        title: 'Entries are closed',
        detail: `entries closed at ${new Date(answer.closedAt).toISOString()}: nothing enters or leaves the draw any more`,
      });
    case 'full':
      return new ProblemError({
        status: 409,
        code: 'draw-full',
        title: 'The draw is full',
        detail: `this draw holds ${answer.maxEntries} entries, its most: nobody new enters`,
      });
    case 'store-short':
      return new ProblemError({
        status: 503,
        code: 'draw-store-full',
        title: 'The draw takes no new entries now',
        detail: 'its store is near its memory limit: entries held are kept; try again later',
        headers: { 'Retry-After': String(STORE_SHORT_RETRY_S) },
      });
    case 'not-frozen':
      return new ProblemError({
        status: 409,
        code: 'draw-not-frozen',
        title: 'The draw is not frozen yet',
        detail: 'its list of entries is published at the freeze, after the close',
      });
  }
}

export function mountDraw(
  router: IRouter,
  deps: {
    auth: Config['auth'];
    draws?: { entries: DrawEntries; views: EntryViews; transcripts: Transcripts } | undefined;
  },
): void {
  const draws = deps.draws;
  if (!draws) return; // a process without draws: 404 as any unknown route
  router.post('/products/:id/draw/entry', async (req, res) => {
    const productId = productIdParam(req.params.id);
    const userId = await shopperId(req, deps.auth);
    const a = await draws.entries.enter(productId, userId, req.ip ?? '', {
      challenge: req.get('challenge'),
      fingerprint: req.get('shopper-fingerprint'),
      accountCreatedAt: await accountCreatedAt(req, deps.auth),
    });
    if (a.kind !== 'entered') throw problemOf(a as Refusal, productId);
    if (a.rate) res.set(rateLimitHeaders(a.rate));
    res.set('Cache-Control', 'no-store');
    res.status(a.created ? 201 : 200).json({
      entryId: a.entryId,
      state: 'entered',
      entriesCloseAt: new Date(a.closeAt).toISOString(),
    });
  });
  router.delete('/products/:id/draw/entry', async (req, res) => {
    const productId = productIdParam(req.params.id);
    const userId = await shopperId(req, deps.auth);
    const a = await draws.entries.withdraw(productId, userId, req.ip ?? '');
    if (a.kind !== 'withdrawn') throw problemOf(a as Refusal, productId);
    res.set('Cache-Control', 'no-store').json({ entryId: a.entryId, state: 'withdrawn' });
  });
  router.get('/products/:id/draw/entry', async (req, res) => {
    const productId = productIdParam(req.params.id);
    const userId = await shopperId(req, deps.auth);
    const a = await draws.views.view(productId, userId, () => req.ip ?? '');
    if (a.kind !== 'view') throw problemOf(a, productId);
    res.set('Cache-Control', 'no-store');
    if (a.view.pollAfterSeconds !== null) res.set('Retry-After', String(a.view.pollAfterSeconds));
    res.json(a.view);
  });
  router.get('/products/:id/draw', async (req, res) => {
    const productId = productIdParam(req.params.id);
    const a = await draws.transcripts.transcript(productId);
    if (a.kind !== 'transcript') throw problemOf(a, productId);
    res.set('Cache-Control', 'no-store').json(a.transcript);
  });
  router.get('/products/:id/draw/entries', async (req, res) => {
    const productId = productIdParam(req.params.id);
    const q = parseOr400(entriesQuery, req.query, 'query');
    const after = Number(q.after ?? 0);
    if (q.format === 'ndjson') return ndjson(res, draws.transcripts, productId, after);
    const page = await draws.transcripts.entries(productId, after, q.limit);
    if (page.kind !== 'page') throw problemOf(page, productId);
    const path = `/products/${productId}/draw/entries`;
    res.json({ entries: page.entries, next: linkNext(res, path, q, page.next), total: page.total });
  });
}

/** Every id of the frozen list from `after` on, one JSON string a line. */
async function ndjson(res: Response, transcripts: Transcripts, productId: string, after: number) {
  let page = await transcripts.entries(productId, after, NDJSON_PART);
  if (page.kind !== 'page') throw problemOf(page, productId);
  res.status(200).type('application/x-ndjson');
  for (;;) {
    if (page.kind !== 'page') break;
    res.write(page.entries.map((id) => `${JSON.stringify(id)}\n`).join(''));
    if (page.next === null) break;
    page = await transcripts.entries(productId, Number(page.next), NDJSON_PART);
  }
  res.end();
}
