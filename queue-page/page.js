// The queue page (docs/queue-page.md): served by the API for each room product at /queue/<id>,
// on the API's own origin, no framework. It joins the line, polls at the pace the API answers
// (pollAfterSeconds, with jitter), backs off on errors, reconnects when the network comes back,
// and survives a reload (the join answers the same place: one place per shopper). It shows a
// countdown to the opening, the place and the estimate, every state of the line in the shopper's
// language, a "buy within" timer once admitted, and hands the turn to the shop's checkout (or
// buys here), and offers Web Push for the turn.
'use strict';

(() => {
  const byId = (id) => document.getElementById(id);
  const cfg = JSON.parse(byId('qp-config').textContent);
  const messages = JSON.parse(byId('qp-messages').textContent);
  const productId = cfg.productId;
  const path = (suffix = '') => `/products/${encodeURIComponent(productId)}${suffix}`;
  const saved = `seckill-queue:${productId}`;

  // ---- words -------------------------------------------------------------------------------

  /**
   * A message of the catalogue, its {placeholders} filled in; one not given stays as it is (the
   * push texts' {until} is filled in by the service worker).
   */
  function t(key, vars = {}) {
    const text = messages[key];
    if (text === undefined) throw new Error(`queue page: no message ${key}`);
    return text.replace(/\{(\w+)\}/g, (all, name) => (name in vars ? String(vars[name]) : all));
  }

  /** A message with a count, in the language's plural form (key.one, key.other, ...). */
  function tn(key, count, vars = {}) {
    const form = new Intl.PluralRules(cfg.lang).select(count);
    const chosen = messages[`${key}.${form}`] !== undefined ? `${key}.${form}` : `${key}.other`;
    return t(chosen, { count: number(count), ...vars });
  }

  const number = (n) => new Intl.NumberFormat(cfg.lang).format(n);

  /** A wait in words: "45 seconds", "3 minutes", "1 hour, 5 minutes" in the shopper's language. */
  function duration(seconds) {
    const unit = (value, name) =>
      new Intl.NumberFormat(cfg.lang, { style: 'unit', unit: name, unitDisplay: 'long' }).format(
        value,
      );
    const s = Math.max(0, Math.round(seconds));
    if (s < 90) return unit(s, 'second');
    if (s < 3600) return unit(Math.round(s / 60), 'minute');
    const h = Math.floor(s / 3600);
    const m = Math.round((s % 3600) / 60);
    return m ? `${unit(h, 'hour')}, ${unit(m, 'minute')}` : unit(h, 'hour');
  }

  /** A countdown: 1:02:03 or 02:03. */
  function clock(seconds) {
    const s = Math.max(0, Math.ceil(seconds));
    const two = (n) => String(n).padStart(2, '0');
    const h = Math.floor(s / 3600);
    const rest = `${two(Math.floor((s % 3600) / 60))}:${two(s % 60)}`;
    return h ? `${h}:${rest}` : rest;
  }

  /** A price in minor units, as the locale writes it (18999 EUR: 189,99 €). */
  function money(price) {
    const format = new Intl.NumberFormat(cfg.lang, { style: 'currency', currency: price.currency });
    const digits = format.resolvedOptions().maximumFractionDigits;
    return format.format(price.amount / 10 ** digits);
  }

  // ---- who the shopper is --------------------------------------------------------------------

  const store = {
    read() {
      try {
        return JSON.parse(localStorage.getItem(saved) ?? '{}');
      } catch {
        return {};
      }
    },
    write(patch) {
      try {
        localStorage.setItem(saved, JSON.stringify({ ...store.read(), ...patch }));
      } catch {
        // private browsing without storage: the page still works, a reload asks again
      }
    },
  };

  /**
   * The shopper: from the URL's fragment (#token=<JWT>, or #shopper=<id> in dev mode), which no
   * server sees and which is wiped from the address bar at once; from the embedding page
   * (postMessage, below); or as this browser kept it for the product.
   */
  function identityFromFragment() {
    const hash = new URLSearchParams(location.hash.slice(1));
    const token = hash.get('token');
    const shopper = hash.get('shopper');
    if (!token && !shopper) return;
    store.write({ who: token ?? shopper });
    history.replaceState(null, '', location.pathname + location.search);
  }

  function identityHeaders() {
    const who = store.read().who;
    if (!who) return {};
    return cfg.auth === 'jwt' ? { authorization: `Bearer ${who}` } : { 'x-user-id': who };
  }

  // ---- the API ----------------------------------------------------------------------------------

  /** Offset of the API's clock from this one (ms), from its Date headers. */
  let clockSkew = 0;
  const now = () => Date.now() + clockSkew;

  async function api(method, url, { body, headers } = {}) {
    const res = await fetch(url, {
      method,
      cache: 'no-store',
      headers: {
        ...identityHeaders(),
        ...(body !== undefined && { 'content-type': 'application/json' }),
        ...headers,
      },
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });
    const date = Date.parse(res.headers.get('date') ?? '');
    if (!Number.isNaN(date)) clockSkew = date + 500 - Date.now();
    let json = {};
    try {
      json = res.status === 204 ? {} : await res.json();
    } catch {
      // not JSON (a proxy's error page): the status says enough
    }
    return { res, json };
  }

  const problemText = (json, res) =>
    json.detail
      ? `${json.title ?? res.status}: ${json.detail}`
      : (json.title ?? String(res.status));
  const codeOf = (json) => String(json.type ?? '').replace(/^urn:seckill:problem:/, '');

  // ---- what the page shows -------------------------------------------------------------------

  const ui = {
    card: byId('qp-card'),
    heading: byId('qp-heading'),
    countdown: byId('qp-countdown'),
    position: byId('qp-position'),
    ahead: byId('qp-ahead'),
    estimate: byId('qp-estimate'),
    detail: byId('qp-detail'),
    identity: byId('qp-identity'),
    who: byId('qp-who'),
    join: byId('qp-join'),
    timer: byId('qp-timer'),
    checkout: byId('qp-checkout'),
    buy: byId('qp-buy'),
    notifyBox: byId('qp-notify-box'),
    notify: byId('qp-notify'),
    notifyStatus: byId('qp-notify-status'),
    status: byId('qp-status'),
    connection: byId('qp-connection'),
    title: byId('qp-title'),
    product: byId('qp-product'),
  };

  const show = (el, text) => {
    el.hidden = text === undefined || text === null || text === '';
    if (!el.hidden) el.textContent = text;
  };

  /** Says `text` to a screen reader once (the polite live region), unless it said it last. */
  let lastSaid = '';
  function say(text) {
    if (text === lastSaid) return;
    lastSaid = text;
    ui.status.textContent = text;
  }

  function connectionProblem(text) {
    show(ui.connection, text);
  }

  const page = {
    product: undefined,
    view: undefined,
    pollTimer: undefined,
    nextPollAt: 0,
    failures: 0,
    stopped: false,
  };

  function showProduct(p) {
    page.product = p;
    ui.title.textContent = t('product.title', { product: p.productId });
    const parts = [];
    if (p.price) parts.push(t('product.price', { price: money(p.price) }));
    parts.push(t('product.left', { left: number(p.remaining), total: number(p.total) }));
    ui.product.textContent = parts.join(' · ');
    renderCountdown();
  }

  /** The opening's countdown, while it is ahead. */
  function renderCountdown() {
    const startsAt = page.product?.startsAt ? Date.parse(page.product.startsAt) : 0;
    const left = (startsAt - now()) / 1000;
    const waiting = !page.view || page.view.state === 'waiting' || page.view.state === 'paused';
    if (startsAt && waiting && left > -1) {
      show(
        ui.countdown,
        left > 0 ? t('countdown.opensIn', { time: clock(left) }) : t('countdown.opening'),
      );
    } else show(ui.countdown, '');
  }

  /** The admission's timer, with a word to a screen reader at 60, 30 and 10 s. */
  function renderTimer() {
    const v = page.view;
    if (!v || v.state !== 'admitted' || !v.saleTokenExpiresAt || boughtWith(v)) {
      show(ui.timer, '');
      return;
    }
    const left = (Date.parse(v.saleTokenExpiresAt) - now()) / 1000;
    show(ui.timer, t('admitted.timer', { time: clock(left) }));
    for (const mark of [60, 30, 10]) {
      if (left <= mark && left > mark - 1.5) say(t('admitted.warn', { time: duration(mark) }));
    }
    // the turn ran out here: the API says what it is now
    if (left <= 0 && !page.pollTimer) poll();
  }

  setInterval(() => {
    renderCountdown();
    renderTimer();
  }, 1000);

  /** The order bought with this view's sale token, if this browser bought one. */
  function boughtWith(view) {
    const kept = store.read();
    return view.saleToken && kept.orderFor === view.saleToken ? kept.orderId : undefined;
  }

  function render(view) {
    page.view = view;
    const s = view.state;
    const bought = boughtWith(view);
    ui.card.dataset.state = bought ? 'bought' : s;
    ui.identity.hidden = true;
    ui.join.hidden = true;
    let heading;
    let detail = '';
    show(ui.position, '');
    show(ui.ahead, '');
    show(ui.estimate, '');
    if (bought) {
      heading = t('bought.heading');
      detail = t('bought.text', { order: bought });
    } else if (s === 'waiting' && view.position === null) {
      heading = t('lobby.heading');
      detail = t('lobby.text');
    } else if (s === 'waiting') {
      heading = t('waiting.heading');
      show(ui.position, t('waiting.position', { position: number(view.position) }));
      show(ui.ahead, tn('waiting.ahead', view.aheadOfYou));
      detail = t('waiting.keep');
    } else if (s === 'paused') {
      heading = t('paused.heading');
      detail = t('paused.text');
      if (view.position)
        show(ui.position, t('waiting.position', { position: number(view.position) }));
    } else if (s === 'sold-out') {
      heading = t('soldOut.heading');
      detail = view.final ? t('soldOut.final') : t('soldOut.maybe');
    } else if (s === 'ended') {
      heading = t('ended.heading');
      detail = t('ended.text');
    } else if (s === 'expired') {
      heading = t('expired.heading');
      detail = t('expired.text');
    } else if (s === 'admitted') {
      heading = t('admitted.heading');
    }
    if (s === 'waiting' && view.estimatedWaitSeconds) {
      const e = view.estimatedWaitSeconds;
      show(
        ui.estimate,
        e.p90 <= 1
          ? t('estimate.soon')
          : t('estimate.text', { p50: duration(e.p50), p90: duration(e.p90) }),
      );
    }
    ui.heading.textContent = heading;
    show(ui.detail, detail);
    renderHandOff(view, bought);
    renderCountdown();
    renderTimer();
    renderNotify(view);
    say(heading);
  }

  /** Once admitted: the shop's checkout, carrying the sale token, or a buy button here. */
  function renderHandOff(view, bought) {
    const admitted = view.state === 'admitted' && view.saleToken && !bought;
    ui.checkout.hidden = !(admitted && cfg.returnUrl);
    ui.buy.hidden = !(admitted && !cfg.returnUrl);
    if (admitted && cfg.returnUrl) {
      const target = cfg.returnUrl.replaceAll('{productId}', encodeURIComponent(productId));
      // in the fragment: never sent to a server, nor in a Referer
      const hand = new URLSearchParams({
        saleToken: view.saleToken,
        expiresAt: view.saleTokenExpiresAt,
        productId,
      });
      ui.checkout.href = `${target}#${hand}`;
    }
  }

  // ---- the line ---------------------------------------------------------------------------------

  /** The next poll in `seconds`, spread by +-10 % more (the API spreads its answers too). */
  function pollIn(seconds) {
    clearTimeout(page.pollTimer);
    page.pollTimer = undefined;
    if (seconds === null || seconds === undefined || page.stopped) return;
    const ms = seconds * 1000 * (0.9 + 0.2 * Math.random());
    page.nextPollAt = Date.now() + ms;
    page.pollTimer = setTimeout(() => {
      page.pollTimer = undefined;
      poll();
    }, ms);
  }

  /** After a failed call: Retry-After when the API gives one, else 1, 2, 4 ... 30 s, jittered. */
  function retryLater(res) {
    page.failures += 1;
    const told = Number(res?.headers.get('retry-after') ?? 0);
    const backoff = Math.min(30, 2 ** Math.min(page.failures - 1, 5)) * (0.5 + Math.random());
    const wait = Math.max(told, backoff);
    connectionProblem(
      navigator.onLine === false
        ? t('connection.offline')
        : t('connection.retrying', { time: duration(wait) }),
    );
    pollIn(wait);
  }

  function answered(res, json) {
    if (res.ok) {
      page.failures = 0;
      connectionProblem('');
      render(json);
      pollIn(json.pollAfterSeconds);
      return;
    }
    const code = codeOf(json);
    if (res.status === 429 || res.status >= 500) return retryLater(res);
    if (code === 'not-in-queue') return join();
    // a refusal to act on: the product, the identity, the room
    page.stopped = true;
    ui.heading.textContent = '';
    if (code === 'no-waiting-room') show(ui.detail, t('product.noRoom'));
    else if (code === 'unknown-product') show(ui.detail, t('product.unknown'));
    else if (res.status === 401) askWho();
    else show(ui.detail, t('join.refused', { reason: problemText(json, res) }));
  }

  /**
   * Joins the line (again: the same place). The one place a join happens, so that a challenge
   * (proof of work, a Turnstile token) can be solved here first, before the join is sent.
   */
  async function join() {
    try {
      const door = await beforeJoin();
      if (door.res) return answered(door.res, door.json);
      const { res, json } = await api('POST', path('/queue'), { headers: door.headers });
      answered(res, json);
    } catch {
      retryLater();
    }
  }

  /** The door's answer a join needs (door.js: a challenge solved off this thread), or its refusal. */
  function beforeJoin() {
    return window.seckillDoor.pass({
      door: page.product?.challenge,
      ask: () => api('GET', path('/challenge')),
      checking: (on) => {
        show(ui.detail, on ? t('door.checking') : '');
        if (on) say(t('door.checking'));
      },
      workerUrl: cfg.doorWorker,
      container: byId('qp-door'),
      shopper: store.read().who,
    });
  }

  async function poll() {
    if (page.stopped) return;
    try {
      const { res, json } = await api('GET', path('/queue'));
      answered(res, json);
    } catch {
      retryLater();
    }
  }

  async function loadProduct() {
    try {
      const { res, json } = await api('GET', path());
      if (res.ok) showProduct(json);
      else if (res.status === 404) {
        page.stopped = true;
        ui.heading.textContent = '';
        show(ui.detail, t('product.unknown'));
      }
    } catch {
      // the line's own polls say the connection is down
    }
  }

  // the product line (units left) is read again while the shopper waits
  setInterval(
    () => {
      if (!page.stopped && page.view && page.view.state !== 'ended') loadProduct();
    },
    15_000 + Math.random() * 5_000,
  );

  // ---- buying -----------------------------------------------------------------------------------

  async function buy() {
    const v = page.view;
    if (!v?.saleToken) return;
    ui.buy.disabled = true;
    ui.buy.textContent = t('admitted.buying');
    // one key per turn: a retry (or a reload) of this purchase never buys twice
    const kept = store.read();
    const key = kept.keyFor === v.saleToken ? kept.buyKey : crypto.randomUUID();
    store.write({ buyKey: key, keyFor: v.saleToken });
    try {
      const { res, json } = await api('POST', '/seckill', {
        body: { productId },
        headers: { 'sale-token': v.saleToken, 'idempotency-key': key },
      });
      if (res.status === 202) {
        store.write({ orderId: json.orderId, orderFor: v.saleToken });
        render(v);
        return;
      }
      show(ui.detail, t('buy.refused', { reason: problemText(json, res) }));
    } catch {
      show(ui.detail, t('connection.offline'));
    }
    ui.buy.disabled = false;
    ui.buy.textContent = t('admitted.buy');
  }

  // ---- notifications ---------------------------------------------------------------------------

  const pushable = () =>
    Boolean(cfg.vapidPublicKey) && 'serviceWorker' in navigator && 'PushManager' in window;

  function renderNotify(view) {
    const waiting = view.state === 'waiting' || view.state === 'paused';
    ui.notifyBox.hidden = !(pushable() && (waiting || store.read().notify));
    if (store.read().notify) {
      ui.notify.hidden = true;
      show(ui.notifyStatus, t('notify.on'));
    }
  }

  function keyBytes(base64url) {
    const text = atob(base64url.replace(/-/g, '+').replace(/_/g, '/'));
    return Uint8Array.from(text, (c) => c.charCodeAt(0));
  }

  async function subscribe() {
    ui.notify.disabled = true;
    try {
      if ((await Notification.requestPermission()) !== 'granted') {
        show(ui.notifyStatus, t('notify.denied'));
        return;
      }
      const registration = await navigator.serviceWorker.register(cfg.serviceWorker, {
        scope: cfg.scope,
      });
      await navigator.serviceWorker.ready;
      const subscription = await registration.pushManager.subscribe({
        userVisibleOnly: true,
        applicationServerKey: keyBytes(cfg.vapidPublicKey),
      });
      const { res } = await api('POST', path('/queue/push'), {
        body: {
          subscription: subscription.toJSON(),
          texts: { admitted: t('push.admitted'), expiring: t('push.expiring') },
          lang: cfg.lang,
        },
      });
      if (!res.ok) throw new Error(String(res.status));
      store.write({ notify: true });
      ui.notify.hidden = true;
      show(ui.notifyStatus, t('notify.on'));
    } catch {
      show(ui.notifyStatus, t('notify.failed'));
    } finally {
      ui.notify.disabled = false;
    }
  }

  // a push reached this browser: the page asks at once rather than at its next poll
  if ('serviceWorker' in navigator) {
    navigator.serviceWorker.addEventListener('message', (e) => {
      if (e.data?.type === 'seckill:push') poll();
    });
  }

  // ---- the network, the tab -------------------------------------------------------------------

  window.addEventListener('offline', () => connectionProblem(t('connection.offline')));
  window.addEventListener('online', () => {
    connectionProblem('');
    page.failures = 0;
    if (!page.stopped && store.read().who) poll();
  });
  // a tab in the background may have its timers slowed: back in front, an overdue poll runs now
  document.addEventListener('visibilitychange', () => {
    if (document.visibilityState === 'visible' && page.pollTimer && Date.now() > page.nextPollAt) {
      poll();
    }
  });

  // ---- starting ---------------------------------------------------------------------------------

  function askWho() {
    ui.heading.textContent = t('identity.heading');
    ui.identity.hidden = false;
    if (cfg.auth === 'dev') {
      ui.join.hidden = false;
      ui.who.focus();
    } else show(ui.detail, t('identity.missing'));
  }

  function start() {
    page.stopped = false;
    if (!store.read().who) return askWho();
    ui.heading.textContent = t('state.loading');
    join();
  }

  // an embedding page (an iframe on the shop's origin, CORS_ORIGINS) may hand the shopper over
  window.addEventListener('message', (e) => {
    if (!cfg.embedders.includes(e.origin)) return;
    if (e.data?.type === 'seckill:shopper' && typeof e.data.token === 'string') {
      store.write({ who: e.data.token });
      start();
    }
  });

  ui.join.addEventListener('click', () => {
    const who = ui.who.value.trim();
    if (!who) return ui.who.focus();
    store.write({ who });
    start();
  });
  ui.who.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') ui.join.click();
  });
  ui.buy.addEventListener('click', buy);
  ui.notify.addEventListener('click', subscribe);

  identityFromFragment();
  loadProduct();
  start();
  if (window.parent !== window) window.parent.postMessage({ type: 'seckill:ready' }, '*');
})();
