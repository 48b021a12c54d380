// The storefront's draw (docs/draw.md): for a product sold by a draw, the entry window with a
// countdown, "Enter the draw" and withdraw, then the entry as GET /products/:id/draw/entry tells
// it (entered, frozen and waiting for round R, won with the time left to buy, waitlisted at
// position N, not drawn, expired), the shopper's rank, and the public transcript with how to
// verify it. The purchase is the storefront's own Buy (storefront.js), with the entry's sale token.
// It reads the transcript at the start and at the freeze only: once drawn it names every entry.
'use strict';

const draw = { transcript: undefined, entry: undefined, timer: undefined, tick: undefined };

/** "2 min 05 s" from milliseconds. */
function duration(ms) {
  const s = Math.max(0, Math.ceil(ms / 1000));
  const m = Math.floor(s / 60);
  return m > 0 ? `${m} min ${String(s % 60).padStart(2, '0')} s` : `${s} s`;
}

/** What each state of an entry says to the shopper. */
function entryText(entry) {
  switch (entry.state) {
    case 'entered':
      return entry.drawAt
        ? `Entered. The list is frozen: waiting for round ${draw.transcript?.round ?? '...'} of the beacon`
        : 'Entered. The draw is made at the close.';
    case 'won':
      return 'You won: buy before your right runs out.';
    case 'waitlisted':
      // a first-round winner the admitter is about to reach: the API's detail says so
      return entry.detail
        ? `${entry.detail[0].toUpperCase()}${entry.detail.slice(1)}.`
        : `Waitlisted at position ${entry.position}: a unit not bought comes to you in rank order.`;
    case 'not-drawn':
      return `Not drawn${entry.detail ? `: ${entry.detail}` : '.'}`;
    case 'expired':
      return 'Your right to buy ran out.';
    default:
      return entry.state;
  }
}

/** The window and the buy-within countdowns, redrawn each second from what was last read. */
function redrawClocks() {
  const t = draw.transcript;
  if (!t) return;
  const now = Date.now();
  const opens = Date.parse(t.entriesOpenAt);
  const closes = Date.parse(t.entriesCloseAt);
  $('draw-window').textContent =
    now < opens
      ? `Entries open in ${duration(opens - now)}`
      : now < closes
        ? `Entries close in ${duration(closes - now)}`
        : 'Entries are closed';
  $('enter').disabled = !(now >= opens && now < closes) || !!draw.entry;
  $('withdraw').hidden = !(draw.entry && now < closes);
  const e = draw.entry;
  $('buy-within').textContent =
    e?.state === 'won' && e.saleTokenExpiresAt && !state.orderId
      ? `Buy within ${duration(Date.parse(e.saleTokenExpiresAt) - now)}`
      : '';
}

function showEntry(entry) {
  draw.entry = entry;
  $('entry').hidden = !entry;
  if (entry) {
    $('entry-state').textContent = entryText(entry);
    $('entry-state').dataset.state =
      entry.drawAt && entry.state === 'entered' ? 'frozen' : entry.state;
    $('entry-id').textContent = entry.entryId;
    $('entry-rank').textContent = entry.rank ? `Your rank: ${entry.rank}` : '';
    $('entry-rank').dataset.rank = entry.rank ?? '';
    $('entry-proof').textContent = entry.proof
      ? `Your entry is leaf ${entry.proof.index} of ${entry.proof.size} under root ${entry.proof.root.slice(0, 16)}...`
      : '';
  }
  // the storefront's Buy takes the entry's sale token as it takes the line's
  state.view = { saleToken: entry?.state === 'won' ? entry.saleToken : undefined };
  $('buy').disabled = !state.view.saleToken || !!state.orderId;
  redrawClocks();
}

/** Reads the entry again when the API says to, or at the next moment of the draw. */
function refreshLater(entry) {
  clearTimeout(draw.timer);
  const t = draw.transcript;
  const now = Date.now();
  const moments = [
    t && Date.parse(t.entriesOpenAt),
    t && Date.parse(t.entriesCloseAt),
    entry?.drawAt && Date.parse(entry.drawAt),
  ]
    .filter((m) => m && m > now)
    .map((m) => m - now + 500);
  if (entry?.pollAfterSeconds) moments.push(entry.pollAfterSeconds * 1000);
  if (t && now >= Date.parse(t.entriesCloseAt) && entry?.state === 'entered') moments.push(1000);
  if (moments.length === 0) return;
  draw.timer = setTimeout(refresh, Math.max(250, Math.min(...moments)));
}

async function readTranscript() {
  const res = await fetch(`${state.api}/products/${state.productId}/draw`);
  if (res.ok) draw.transcript = await res.json();
  return res;
}

async function refresh() {
  const { res, body } = await call(`/products/${state.productId}/draw/entry`);
  if (res.status === 404 && body.type === 'urn:seckill:problem:not-entered') {
    showEntry(undefined);
  } else if (refused(res, body)) {
    return;
  } else {
    problem();
    // the freeze names the round: read it once
    if (body.drawAt && !draw.transcript?.round) await readTranscript();
    showEntry(body);
  }
  refreshLater(draw.entry);
}

async function enterDraw() {
  $('enter').disabled = true;
  // an entry pays at the product's door, as a join does (storefront.js)
  let door;
  try {
    door = await passDoor();
  } catch (err) {
    problem(`The browser check failed: ${err.message}`);
    return redrawClocks();
  }
  if (door.res && refused(door.res, door.json)) return redrawClocks();
  const { res, body } = await call(`/products/${state.productId}/draw/entry`, {
    method: 'POST',
    headers: door.headers,
  });
  if (refused(res, body)) return redrawClocks();
  problem();
  await refresh();
}

async function withdraw() {
  const { res, body } = await call(`/products/${state.productId}/draw/entry`, { method: 'DELETE' });
  if (refused(res, body)) return;
  problem();
  await refresh();
}

/** The storefront in draw mode: true when the product is sold by a draw. */
async function startDraw(product) {
  const res = await readTranscript();
  if (!res.ok) return false;
  $('line-section').hidden = true;
  $('draw').hidden = false;
  $('transcript').href = `${state.api}/products/${state.productId}/draw`;
  // the verifier is one file to run with Node.js alone (examples/verify-draw.mjs, served here)
  $('verify-command').textContent = `node verify-draw.mjs ${$('transcript').href}`;
  $('enter').addEventListener('click', enterDraw);
  $('withdraw').addEventListener('click', withdraw);
  // the shopper's id may change before they enter: their entry is read again then
  $('who').addEventListener('change', refresh);
  draw.tick = setInterval(redrawClocks, 1000);
  await refresh();
  // last: the title says the page is ready, its window and entry drawn
  $('title').textContent = `Draw: ${product.productId}`;
  return true;
}
