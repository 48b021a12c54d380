/**
 * The queue page a shop ships (docs/queue-page.md): `GET /queue/:id`, one stable URL per room
 * product (named by `GET /products/:id` as `waitingRoom.pageUrl`), in the shopper's language
 * (`?lang=`, else Accept-Language, else English); its assets under `/queue/assets/`, named by
 * their content's hash and cached for good; its service worker at `/queue/sw.js`. The page may be
 * framed by the shop's origins (CORS_ORIGINS) and by nothing else.
 */
import type { IRouter, Response } from 'express';
import type { Config } from '../../config/index.js';
import { ProblemError } from '../../errors.js';
import { shopperId } from '../auth.js';
import { productIdParam } from '../validation.js';
import type { QueuePageAssets } from './queue-page-assets.js';
import { queuePageHtml } from './queue-page-html.js';

export interface QueuePageDeps {
  assets: QueuePageAssets;
  page: Config['queuePage'];
  auth: Config['auth'];
  /** the shop's origins: they may frame the page and hand it the shopper */
  embedders: readonly string[];
  vapidPublicKey: string | undefined;
  /** who followed the page's decoy link (the fairness report's decoy rule); none: not noted */
  decoy?: ((productId: string, userId: string, ip: string) => Promise<void>) | undefined;
  /**
   * the door's kinds the deployment has keys for: a captcha's widget needs its provider's
   * origins in the page's CSP, and a product may name any configured kind (not only CHALLENGE's)
   */
  challengeKinds?: ReadonlySet<string>;
}

/** The decoy's answer: a plain page, as an unknown path's, that tells a script nothing. */
const NOT_FOUND_PAGE =
  '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Not found</title></head>' +
  '<body><h1>Not found</h1></body></html>\n';

/**
 * The origins a captcha's widget loads from, frames and calls (the providers' documented CSP:
 * Turnstile's script and iframe at challenges.cloudflare.com; hCaptcha's at hcaptcha.com).
 */
const WIDGET_ORIGINS = {
  turnstile: {
    script: 'https://challenges.cloudflare.com',
    frame: 'https://challenges.cloudflare.com',
    style: '',
    connect: '',
  },
  hcaptcha: {
    script: 'https://hcaptcha.com https://*.hcaptcha.com',
    frame: 'https://hcaptcha.com https://*.hcaptcha.com',
    style: ' https://hcaptcha.com https://*.hcaptcha.com',
    connect: ' https://hcaptcha.com https://*.hcaptcha.com',
  },
} as const;

const YEAR_S = 31_536_000;

/** The queue page of a product: a path on this API, stable for the product. */
export const queuePagePath = (productId: string) => `/queue/${encodeURIComponent(productId)}`;

/**
 * The language to answer in: `?lang=` when the page has it, else the first of Accept-Language's
 * (by q) whose language the page has, else English.
 */
export function pickLanguage(
  available: readonly string[],
  asked: unknown,
  acceptLanguage: string | undefined,
): string {
  const fallback = available[0]!;
  const has = (tag: string) => available.find((l) => l === tag.toLowerCase().split('-')[0]);
  if (typeof asked === 'string' && has(asked)) return has(asked)!;
  const ranked = (acceptLanguage ?? '')
    .split(',')
    .map((part, i) => {
      const [tag, ...params] = part.trim().split(';');
      const q = params.map((p) => /^\s*q=([\d.]+)\s*$/.exec(p)?.[1]).find(Boolean);
      return { tag: tag!.trim(), q: q === undefined ? 1 : Number(q), i };
    })
    .filter((x) => x.tag !== '' && x.tag !== '*' && x.q > 0)
    .sort((a, b) => b.q - a.q || a.i - b.i);
  for (const { tag } of ranked) if (has(tag)) return has(tag)!;
  return fallback;
}

function policy(deps: QueuePageDeps): string {
  const logo = deps.page.logoUrl ? ` ${new URL(deps.page.logoUrl).origin}` : '';
  const kinds = deps.challengeKinds ?? new Set<string>();
  const widgets = (['turnstile', 'hcaptcha'] as const)
    .filter((k) => kinds.has(k))
    .map((k) => WIDGET_ORIGINS[k]);
  const each = (part: (w: (typeof widgets)[number]) => string) => widgets.map(part).join('');
  return [
    "default-src 'none'",
    `script-src 'self'${each((w) => ` ${w.script}`)}`,
    `style-src 'self'${each((w) => w.style)}`,
    `img-src 'self' data:${logo}`,
    `connect-src 'self'${each((w) => w.connect)}`,
    ...(widgets.length ? [`frame-src ${widgets.map((w) => w.frame).join(' ')}`] : []),
    "worker-src 'self'",
    "manifest-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    `frame-ancestors 'self'${deps.embedders.map((o) => ` ${o}`).join('')}`,
  ].join('; ');
}

export function mountQueuePage(router: IRouter, deps: QueuePageDeps): void {
  const csp = policy(deps);
  const languages = [...deps.assets.catalogues.keys()];
  const safe = (res: Response) =>
    res.set({ 'X-Content-Type-Options': 'nosniff', 'Referrer-Policy': 'no-referrer' });

  router.get('/queue/sw.js', (_req, res) => {
    safe(res).set({ 'Cache-Control': 'no-cache', 'Service-Worker-Allowed': '/queue/' });
    res.type('text/javascript').send(deps.assets.serviceWorker);
  });

  router.get('/queue/assets/:file', (req, res) => {
    const asset = deps.assets.byFile.get(req.params.file);
    if (!asset) {
      throw new ProblemError({
        status: 404,
        code: 'no-such-asset',
        title: 'No such asset',
        detail: 'the queue page links its assets by their hash: reload the page for this release',
      });
    }
    safe(res).set('Cache-Control', `public, max-age=${YEAR_S}, immutable`);
    res.type(asset.type).send(asset.body);
  });

  // the decoy link: the identity it carries (the page's token, the shopper header) is noted as
  // having followed it, and the answer is the plain 404 page of a path that is not there
  router.get('/queue/:id/skip', async (req, res) => {
    const productId = productIdParam(req.params.id);
    try {
      const userId = await shopperId(req, deps.auth);
      await deps.decoy?.(productId, userId, req.ip ?? '');
    } catch {
      // no identity, or a bad one: nothing to note
    }
    safe(res).set('Cache-Control', 'no-store');
    res.status(404).type('text/html').send(NOT_FOUND_PAGE);
  });

  router.get('/queue/:id', (req, res) => {
    const productId = productIdParam(req.params.id);
    const lang = pickLanguage(languages, req.query.lang, req.get('accept-language'));
    const html = queuePageHtml(
      deps.assets,
      {
        productId,
        lang,
        auth: deps.auth.mode,
        returnUrl: deps.page.returnUrl ?? null,
        vapidPublicKey: deps.vapidPublicKey ?? null,
        shopName: deps.page.shopName,
        logoUrl: deps.page.logoUrl ?? null,
        embedders: deps.embedders,
        pagePath: queuePagePath(productId),
      },
      deps.assets.catalogues.get(lang)!,
    );
    safe(res).set({
      'Content-Security-Policy': csp,
      // small, and names the assets of this release: asked again each time
      'Cache-Control': 'no-cache',
      'Content-Language': lang,
      Vary: 'Accept-Language',
    });
    res.type('text/html').send(html);
  });
}
