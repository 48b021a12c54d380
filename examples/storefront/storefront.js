// A shop's page for a drop behind the waiting room, on its own origin: no framework, no build.
// It joins the line, polls as the API says (pollAfterSeconds), buys with the sale token once
// admitted, starts the payment and hands it to the payment provider (here the demo provider
// served beside this page), then shows the order. The API must list this page's origin in
// CORS_ORIGINS (`npm start` does for http://127.0.0.1:3080).
'use strict';

const $ = (id) => document.getElementById(id);
const state = {
  api: '',
  productId: '',
  view: undefined,
  orderId: undefined,
  timer: undefined,
  door: undefined,
};

/** What a shopper can do in each state of the line. */
const ADVICE = {
  waiting: 'Keep this page open: it asks again when the API says to.',
  admitted: 'Your turn: buy before your sale token runs out.',
  paused: 'The drop is paused by the shop: your place is kept.',
  expired: 'Your turn ran out before you bought.',
  'sold-out': 'Sold out.',
  ended: 'The drop is over.',
};

/** The identity header: a JWT goes as a bearer, anything else as the dev mode's shopper id. */
function identity() {
  const who = $('who').value.trim();
  return /^[\w-]+\.[\w-]+\.[\w-]+$/.test(who)
    ? { authorization: `Bearer ${who}` }
    : { 'x-user-id': who };
}

async function call(path, init = {}) {
  const res = await fetch(`${state.api}${path}`, {
    ...init,
    headers: { ...identity(), ...(init.headers ?? {}) },
  });
  const body = res.status === 204 ? {} : await res.json();
  return { res, body };
}

function problem(text) {
  $('problem').textContent = text ?? '';
}

/** A problem+json answer in words, or nothing. */
function refused(res, body) {
  if (res.ok) return false;
  problem(`${body.title ?? res.status}${body.detail ? `: ${body.detail}` : ''}`);
  return true;
}

function showView(view) {
  state.view = view;
  $('line').hidden = false;
  $('state').textContent = view.state;
  $('state').dataset.state = view.state;
  $('place').textContent =
    view.position === null || view.position === undefined
      ? ''
      : `Place ${view.position} (${view.aheadOfYou} ahead of you)`;
  const e = view.estimatedWaitSeconds;
  $('estimate').textContent = e ? `About ${e.p50} s, at most ~${e.p90} s` : '';
  let advice = ADVICE[view.state] ?? '';
  if (view.state === 'sold-out') {
    advice += view.final
      ? ' Every unit is sold for good.'
      : ' Units may come back (unpaid orders still open): this page keeps asking.';
  }
  $('advice').textContent = advice;
  $('buy').disabled = !(view.state === 'admitted' && view.saleToken) || !!state.orderId;
}

function pollLater(view) {
  clearTimeout(state.timer);
  if (view.pollAfterSeconds === null || view.pollAfterSeconds === undefined) return;
  state.timer = setTimeout(poll, Math.max(250, view.pollAfterSeconds * 1000));
}

async function poll() {
  const { res, body } = await call(`/products/${state.productId}/queue`);
  if (refused(res, body)) return;
  problem();
  showView(body);
  pollLater(body);
}

/** The door's answer a join needs (door.js: a proof of work in a web worker, or a widget). */
async function passDoor() {
  return seckillDoor.pass({
    door: state.door,
    ask: async () => {
      const { res, body } = await call(`/products/${state.productId}/challenge`);
      return { res, json: body };
    },
    checking: (on) => {
      $('checking').hidden = !on;
    },
    workerUrl: 'door-worker.js',
    container: $('widget'),
    shopper: $('who').value.trim(),
  });
}

async function join() {
  $('join').disabled = true;
  let door;
  try {
    door = await passDoor();
  } catch (err) {
    problem(`The browser check failed: ${err.message}`);
    $('join').disabled = false;
    return;
  }
  if (door.res && refused(door.res, door.json)) {
    $('join').disabled = false;
    return;
  }
  const { res, body } = await call(`/products/${state.productId}/queue`, {
    method: 'POST',
    headers: door.headers,
  });
  if (refused(res, body)) {
    $('join').disabled = false;
    return;
  }
  problem();
  showView(body);
  pollLater(body);
}

async function buy() {
  $('buy').disabled = true;
  const { res, body } = await call('/seckill', {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'sale-token': state.view.saleToken,
      // a retry of this very purchase never buys twice
      'idempotency-key': (state.key ??= crypto.randomUUID()),
    },
    body: JSON.stringify({ productId: state.productId }),
  });
  if (refused(res, body)) {
    $('buy').disabled = false;
    return;
  }
  clearTimeout(state.timer);
  state.orderId = body.orderId;
  $('buy-within').textContent = '';
  await showOrder();
}

/** The order, asked again each second while it is only in Redis (pending). */
async function showOrder() {
  const { res, body } = await call(`/orders/${state.orderId}`);
  if (refused(res, body)) return;
  $('order').hidden = false;
  $('order-id').textContent = body.orderId;
  $('order-status').textContent = body.status;
  $('order-status').dataset.status = body.status;
  const total = body.total ? `${body.total.amount} ${body.total.currency} (minor units). ` : '';
  $('order-detail').textContent =
    body.status === 'awaiting_payment' ? `${total}Pay by ${body.payBy}.` : total;
  $('pay').disabled = body.status !== 'awaiting_payment';
  if (body.status === 'pending') setTimeout(showOrder, 1000);
}

async function pay() {
  $('pay').disabled = true;
  const started = await call(`/orders/${state.orderId}/pay`, { method: 'POST' });
  if (refused(started.res, started.body)) return;
  const intent = started.body;
  // the provider's checkout: here the demo provider beside this page, which signs the webhook
  const paid = await fetch('demo-provider/pay', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      orderId: intent.orderId,
      paymentIntentId: intent.paymentIntentId,
      amount: intent.amount,
      currency: intent.currency,
    }),
  });
  if (refused(paid, await paid.json())) return;
  problem();
  await showOrder();
}

async function start() {
  const config = await (await fetch('storefront-config.json')).json();
  const params = new URLSearchParams(location.search);
  state.api = params.get('api') ?? config.api;
  state.productId = params.get('product') ?? config.productId;
  $('who').value = params.get('shopper') ?? `shopper-${Math.random().toString(36).slice(2, 8)}`;
  const res = await fetch(`${state.api}/products/${state.productId}`);
  const p = await res.json();
  if (!res.ok) return problem(`${p.title}: ${p.detail ?? ''}`);
  state.door = p.challenge;
  $('title').textContent = `Drop: ${p.productId}`;
  $('product').textContent =
    `${p.status}, ${p.remaining} of ${p.total} left, ${p.limitPerUser} per shopper`;
  $('buy').addEventListener('click', buy);
  $('pay').addEventListener('click', pay);
  // a draw (draw.js) or the line
  if (await startDraw(p)) return;
  $('join').addEventListener('click', join);
}

start().catch((err) => problem(`The API did not answer: ${err}`));
