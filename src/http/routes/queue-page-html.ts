/**
 * The queue page's HTML (docs/queue-page.md): the same for every product but for its id and the
 * shopper's language. Its words come from the message catalogue of that language, the page's
 * settings and catalogue ride along as JSON (a `<script type="application/json">` is data, not
 * code: the page's CSP allows scripts from this origin only), and queue-page/page.js does the rest.
 */
import type { Messages, QueuePageAssets } from './queue-page-assets.js';

export interface PageSettings {
  productId: string;
  lang: string;
  /** `dev`: the shopper is an id (X-User-Id); `jwt`: a token (Authorization: Bearer) */
  auth: 'dev' | 'jwt';
  returnUrl: string | null;
  vapidPublicKey: string | null;
  shopName: string;
  logoUrl: string | null;
  /** origins that may embed the page and hand it the shopper (postMessage) */
  embedders: readonly string[];
  /** the page's URL without its query (the language links add theirs) */
  pagePath: string;
}

/**
 * The decoy link's target (docs/fairness.md#the-decoy-link): off-screen, out of the tab order and
 * hidden from screen readers, so a person never follows it; a script that follows every link does.
 */
export const decoyPath = (productId: string) => `/queue/${encodeURIComponent(productId)}/skip`;

const escapeHtml = (text: string) =>
  text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!,
  );

/** JSON inside a script element: `<` escaped, so no text can close the element. */
const scriptJson = (value: unknown) => JSON.stringify(value).replace(/</g, '\\u003c');

/** A language's own name for itself ("Deutsch", "français"). */
function ownName(lang: string): string {
  try {
    return new Intl.DisplayNames([lang], { type: 'language' }).of(lang) ?? lang;
  } catch {
    return lang;
  }
}

export function queuePageHtml(
  assets: QueuePageAssets,
  settings: PageSettings,
  messages: Messages,
): string {
  const t = (key: string) => escapeHtml(messages[key] ?? key);
  const config = {
    productId: settings.productId,
    lang: settings.lang,
    auth: settings.auth,
    returnUrl: settings.returnUrl,
    vapidPublicKey: settings.vapidPublicKey,
    embedders: settings.embedders,
    serviceWorker: '/queue/sw.js',
    doorWorker: `/queue/assets/${assets.doorWorker.file}`,
    scope: '/queue/',
  };
  const brand = settings.logoUrl
    ? `<img class="qp-logo" src="${escapeHtml(settings.logoUrl)}" alt="${escapeHtml(settings.shopName)}">`
    : `<span class="qp-shop">${escapeHtml(settings.shopName)}</span>`;
  const languages = [...assets.catalogues.keys()]
    .map((lang) => {
      const current = lang === settings.lang ? ' aria-current="true"' : '';
      return `<a href="${escapeHtml(settings.pagePath)}?lang=${lang}" lang="${lang}" hreflang="${lang}"${current}>${escapeHtml(ownName(lang))}</a>`;
    })
    .join('\n        ');
  const theme = assets.theme
    ? `\n    <link rel="stylesheet" href="/queue/assets/${assets.theme.file}">`
    : '';
  return `<!doctype html>
<html lang="${escapeHtml(settings.lang)}">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <meta name="referrer" content="no-referrer">
    <title>${t('page.title')} · ${escapeHtml(settings.shopName)}</title>
    <link rel="stylesheet" href="/queue/assets/${assets.style.file}">${theme}
    <script id="qp-config" type="application/json">${scriptJson(config)}</script>
    <script id="qp-messages" type="application/json">${scriptJson(messages)}</script>
    <script src="/queue/assets/${assets.door.file}" defer></script>
    <script src="/queue/assets/${assets.script.file}" defer></script>
  </head>
  <body>
    <a class="qp-skip" href="#main">${t('page.skip')}</a>
    <header class="qp-header">
      ${brand}
      <nav class="qp-lang" aria-label="${t('page.language')}">
        ${languages}
      </nav>
    </header>
    <main id="main" class="qp-main" tabindex="-1">
      <h1 id="qp-title">${escapeHtml(settings.productId)}</h1>
      <p id="qp-product" class="qp-product"></p>
      <section id="qp-card" class="qp-card" aria-labelledby="qp-heading" data-state="">
        <h2 id="qp-heading">${t('state.loading')}</h2>
        <p id="qp-countdown" class="qp-countdown" role="timer" aria-live="off" hidden></p>
        <p id="qp-position" class="qp-position" hidden></p>
        <p id="qp-ahead" hidden></p>
        <p id="qp-estimate" hidden></p>
        <p id="qp-timer" class="qp-timer" role="timer" aria-live="off" hidden></p>
        <p id="qp-detail" class="qp-muted" hidden></p>
        <div id="qp-identity" hidden>
          <label for="qp-who">${t('identity.label')}</label>
          <input id="qp-who" autocomplete="username" spellcheck="false" aria-describedby="qp-who-hint">
          <p id="qp-who-hint" class="qp-muted">${t('identity.hint')}</p>
        </div>
        <div id="qp-door" hidden></div>
        <p>
          <button id="qp-join" class="qp-button" type="button" hidden>${t('join.button')}</button>
          <a id="qp-checkout" class="qp-button" target="_top" rel="noopener" hidden>${t('admitted.checkout')}</a>
          <button id="qp-buy" class="qp-button" type="button" hidden>${t('admitted.buy')}</button>
        </p>
      </section>
      <section id="qp-notify-box" class="qp-card" hidden>
        <button id="qp-notify" class="qp-button qp-secondary" type="button">${t('notify.button')}</button>
        <p id="qp-notify-status" class="qp-muted" hidden></p>
      </section>
      <p id="qp-connection" class="qp-alert" role="alert" hidden></p>
      <p id="qp-status" class="qp-sr-only" role="status" aria-live="polite"></p>
      <noscript><p>${t('page.noscript')}</p></noscript>
      <a class="qp-decoy" href="${escapeHtml(decoyPath(settings.productId))}" tabindex="-1" aria-hidden="true" rel="nofollow">Skip the line</a>
    </main>
  </body>
</html>
`;
}
