/**
 * The dashboard page's script (an inline module; plain JS in a string, so no template literals
 * inside). Each product's card is built once and updated in place on every snapshot: a folded or
 * unfolded card stays as its viewer left it, and a 1,024-cell heat map costs only the cells that
 * changed. Figures use thousands separators; times count down by the server's clock.
 */
export const DASHBOARD_CLIENT = String.raw`
const $ = (id) => document.getElementById(id);
const nf = new Intl.NumberFormat('en-US');
const num = (n) => (n === null || n === undefined ? '–' : nf.format(Math.round(n)));
const perSecond = (n) => (n === null || n === undefined ? '–' : n > 0 && n < 10 ? n.toFixed(1) : nf.format(Math.round(n)));
const millis = (n) => (n === null || n === undefined ? '–' : n.toFixed(1));
const esc = (s) => String(s).replace(/[&<>"']/g, (c) => '&#' + c.charCodeAt(0) + ';');
const two = (n) => String(n).padStart(2, '0');
/** whole seconds as "45 s", "2 min 05 s", "3 h 02 min 05 s", "2 d 04 h" */
function clock(seconds) {
  const t = Math.max(0, Math.round(seconds));
  const d = Math.floor(t / 86400), h = Math.floor((t % 86400) / 3600), m = Math.floor((t % 3600) / 60), s = t % 60;
  if (d > 0) return d + ' d ' + two(h) + ' h';
  if (h > 0) return h + ' h ' + two(m) + ' min ' + two(s) + ' s';
  if (m > 0) return m + ' min ' + two(s) + ' s';
  return s + ' s';
}
/** a sale's length: tenths under 10 s ("1.6 s") */
const took = (ms) => (ms < 10000 ? (ms / 1000).toFixed(1) + ' s' : clock(ms / 1000));
const plural = (n, word) => num(n) + ' ' + word + (n === 1 ? '' : 's');
const setText = (el, text) => { if (el.textContent !== text) el.textContent = text; };
const KIND_COLOURS = ['#b42318', '#c2410c', '#a16207', '#7c3aed', '#be185d', '#0e7490', '#64748b', '#111827', '#94a3b8'];
/** every colour a heat-map cell can take, each in the legend: none seeded, empty, four steps of
 * remaining of seeded, and a shard that did not answer */
const HEAT = [['#ffffff', 'none seeded'], ['#e5e7eb', 'empty'], ['#bfdbfe', '≤ 25 %'], ['#93c5fd', '≤ 50 %'], ['#3b82f6', '≤ 75 %'], ['#1d4ed8', '≤ 100 %'], ['#b42318', 'shard down']];
const DOWN = HEAT[6][0];
function heat(stock, seeded) {
  if (seeded <= 0) return HEAT[0][0];
  if (stock <= 0) return HEAT[1][0];
  return HEAT[1 + Math.min(4, Math.ceil((4 * stock) / seeded))][0];
}
let skew = 0; // server clock minus ours
const serverNow = () => Date.now() + skew;

/** the charts' points {at, accepted, refusals}, oldest first: the server's recent past (the
 * history event, on every (re)connect), then one per snapshot; span: how far back they reach */
let history = [];
let span = 120000;
/** stacked areas over time, the newest point at the right edge */
function chart(canvas, times, series, colours) {
  const w = (canvas.width = canvas.clientWidth * devicePixelRatio);
  const h = (canvas.height = canvas.clientHeight * devicePixelRatio);
  const g = canvas.getContext('2d');
  const n = times.length;
  canvas.dataset.points = String(n);
  canvas.dataset.from = String(times[0]);
  const stacked = times.map((_, i) => series.reduce((a, s) => a + s[i], 0));
  const max = Math.max(1, ...stacked);
  const end = times[n - 1];
  const x = (i) => w * (1 - (end - times[i]) / span), y = (v) => h - (v / max) * (h - 4) - 1;
  let below = new Array(n).fill(0);
  series.forEach((s, k) => {
    const top = below.map((b, i) => b + s[i]);
    g.beginPath();
    top.forEach((v, i) => (i ? g.lineTo(x(i), y(v)) : g.moveTo(x(i), y(v))));
    for (let i = n - 1; i >= 0; i--) g.lineTo(x(i), y(below[i]));
    g.closePath();
    g.fillStyle = colours[k] + (series.length > 1 ? 'cc' : '33');
    g.fill();
    if (series.length === 1) {
      g.strokeStyle = colours[k]; g.lineWidth = 2 * devicePixelRatio; g.beginPath();
      top.forEach((v, i) => (i ? g.lineTo(x(i), y(v)) : g.moveTo(x(i), y(v))));
      g.stroke();
    }
    below = top;
  });
  return max;
}

/** POST /seckill answers: accepted, then each refusal kind in its chart colour */
function kindsTable(s) {
  const body = $('kinds');
  const rows = [{ kind: 'accepted', label: '202 accepted', colour: '#1d4ed8' }].concat(
    s.kinds.map((k, i) => ({ kind: k.kind, label: k.label, colour: KIND_COLOURS[i % KIND_COLOURS.length] })));
  if (body.rows.length !== rows.length) {
    body.innerHTML = rows.map((k) => '<tr data-testid="kind-' + esc(k.kind) + '"><td><span class="swatch" style="background:' +
      k.colour + '"></span>' + esc(k.label) + '</td><td data-testid="per-s-' + esc(k.kind) +
      '"></td><td data-testid="total-' + esc(k.kind) + '"></td></tr>').join('');
  }
  rows.forEach((k, i) => {
    const accepted = k.kind === 'accepted';
    setText(body.rows[i].cells[1], perSecond(accepted ? s.rates.accepted : s.rates.refusals[k.kind]));
    setText(body.rows[i].cells[2], num(accepted ? s.totals.accepted : s.totals.refusals[k.kind]));
  });
}

const cards = new Map();
function makeCard(id, n) {
  const root = document.createElement('details');
  root.className = 'sale' + (n > 128 ? ' wide' : '');
  root.setAttribute('data-testid', 'sale-' + id);
  const t = (name) => 'data-testid="' + name + '-' + esc(id) + '"';
  root.innerHTML = '<summary><h3>' + esc(id) + '</h3><span class="badge" ' + t('status') + '></span> ' +
    '<span class="muted" data-f="epoch"></span> · <b ' + t('remaining') + '></b> of <span data-f="total"></span> left · <b ' +
    t('sold') + '></b> sold<span data-f="returned"></span> · <span class="when" ' + t('when') + '></span></summary>' +
    '<p class="muted" data-f="orders"></p><div class="heat' + (n > 128 ? ' small' : '') + '" ' + t('heat') + '></div>' +
    '<p class="muted legend" ' + t('legend') + '>remaining of seeded:' + HEAT.map((c) => '<i style="background:' + c[0] + '"></i>' + c[1]).join('') +
    '</p><p class="muted" data-f="shards" ' + t('shards') + '></p><div class="controls"></div>';
  const map = root.querySelector('.heat');
  const cells = [];
  for (let i = 0; i < n; i++) {
    const cell = document.createElement('i');
    cell.setAttribute('data-testid', 'segment-' + id + '-' + i);
    map.appendChild(cell);
    cells.push(cell);
  }
  const card = { root, n, cells, chosen: false, f: (name) => root.querySelector('[data-f=' + name + ']'),
    el: (name) => root.querySelector('[data-testid="' + name + '-' + id + '"]') };
  // once its viewer folds or unfolds it, a card stays so
  root.querySelector('summary').addEventListener('click', () => { card.chosen = true; });
  controlBar(card, id);
  return card;
}

/** "starts in", "ends in", "sold out after": by the server's clock */
function when(p) {
  if (p.status === 'upcoming' && p.startsAt) return 'starts in ' + clock((p.startsAt - serverNow()) / 1000);
  if (p.soldOutAfterMs !== null) return 'sold out after ' + took(p.soldOutAfterMs);
  if (p.status === 'sold out') return p.backlog > 0 ? 'sold out · persisting orders…' : 'sold out';
  if (p.status === 'live' && p.endsAt) return 'ends in ' + clock((p.endsAt - serverNow()) / 1000);
  if (p.status === 'ended') return 'ended ' + (p.endsAt ? new Date(p.endsAt).toLocaleString('en-GB') : '');
  return '';
}

function update(p) {
  let card = cards.get(p.productId);
  const n = p.segments.stock.length;
  if (!card || card.n !== n) {
    if (card) card.root.remove();
    card = makeCard(p.productId, n);
    cards.set(p.productId, card);
  }
  card.p = p;
  if (!card.chosen) card.root.open = !p.folded;
  const badge = card.el('status');
  setText(badge, p.status);
  badge.className = 'badge ' + p.status.replace(' ', '-');
  // an ended sale takes no control (each answers 409 sale-over): none shown
  card.root.querySelector('.controls').hidden = p.status === 'ended';
  setText(card.f('epoch'), 'epoch ' + p.epoch);
  setText(card.el('remaining'), num(p.remaining));
  setText(card.f('total'), num(p.total));
  setText(card.el('sold'), num(p.sold));
  setText(card.f('returned'), p.returned ? ' (' + num(p.returned) + ' returned)' : '');
  const w = card.el('when');
  setText(w, when(p));
  w.className = 'when' + (p.soldOutAfterMs !== null || p.status === 'sold out' ? ' soldout' : '');
  w.title = p.soldOutFrom ? 'from the ' + (p.soldOutFrom === 'start' ? 'sale\'s start (startsAt)' : 'first sale') + ' to the last unit sold' : '';
  const orders = Object.entries(p.orders).map(([k, v]) => k.replace('_', ' ') + ' ' + num(v)).join(' · ') || 'no order rows yet';
  setText(card.f('orders'), 'orders: ' + orders + ' · outbox lag ' + num(p.backlog));
  const seg = p.segments, down = new Set(seg.unreachable);
  const perShard = p.shards.map(() => ({ segments: 0, left: 0 }));
  for (let i = 0; i < n; i++) {
    const seeded = seg.stock[i] + seg.sold[i] - seg.returned[i];
    const shard = seg.shard.length ? p.shards[seg.shard[i]] : undefined;
    if (shard) { perShard[seg.shard[i]].segments++; perShard[seg.shard[i]].left += seg.stock[i]; }
    const colour = down.has(i) ? DOWN : heat(seg.stock[i], seeded);
    const title = 'segment ' + i + ': ' + (down.has(i) ? 'shard not answering' : num(seg.stock[i]) + ' of ' + num(seeded) + ' left, ' +
      num(seg.sold[i]) + ' sold') + (shard ? ' · shard ' + shard : '');
    const cell = card.cells[i];
    if (cell.title !== title) { cell.title = title; cell.style.background = colour; cell.dataset.stock = String(seg.stock[i]); }
  }
  setText(card.f('shards'), (p.shards.length ? p.shards.map((s, i) => 'shard ' + s + ': ' + plural(perShard[i].segments, 'segment') + ', ' +
    num(perShard[i].left) + ' left').join(' · ') : plural(n, 'segment') + ' on one Redis') +
    (down.size ? ' · ' + plural(down.size, 'segment') + ' unreachable' : ''));
  return card;
}

function tick() {
  for (const card of cards.values()) if (card.p) setText(card.el('when'), when(card.p));
}
setInterval(tick, 1000);

const events = new EventSource('/admin/dashboard/stream');
events.onmessage = (e) => {
  const s = JSON.parse(e.data);
  skew = s.at - Date.now();
  setText($('clock'), 'updated ' + new Date(s.at).toLocaleTimeString('en-GB'));
  const r = s.rates;
  setText($('window'), 'accepted / s (last ' + Math.round(r.seconds) + ' s)');
  setText($('accepted'), perSecond(r.accepted));
  setText($('refused'), perSecond(r.refused));
  setText($('lat'), millis(r.latency.p50) + ' / ' + millis(r.latency.p99));
  const q = s.queue;
  setText($('queue'), [q.waiting, q.active, q.delayed, q.failed].map(num).join(' / '));
  setText($('outbox'), num(s.outboxBacklog));
  setText($('persisted'), num(s.persistedTotal));
  const w = s.webhooks;
  setText($('webhooks'), w ? num(w.pending) + ' / ' + num(w.deadLetters) : '–');
  kindsTable(s);
  renderRooms(s);
  renderPanels(s);
  history.push({ at: s.at, accepted: r.accepted, refusals: r.refusals });
  while (history.length > 1 && history[0].at < s.at - span) history.shift();
  const times = history.map((h) => h.at);
  setText($('acceptedMax'), '(top ' + perSecond(chart($('acceptedChart'), times, [history.map((h) => h.accepted)], ['#1d4ed8'])) + ')');
  setText($('refusedMax'), '(top ' + perSecond(chart($('refusedChart'), times,
    s.kinds.map((k) => history.map((h) => h.refusals[k.kind] || 0)), KIND_COLOURS)) + ')');
  const seen = new Set(s.products.map((p) => p.productId));
  for (const [id, card] of cards) if (!seen.has(id)) { card.root.remove(); cards.delete(id); }
  // in the snapshot's order; a card is moved only when out of place (a move would drop the focus)
  const slot = { sales: 0, ended: 0 };
  for (const p of s.products) {
    const root = update(p).root, box = p.folded ? 'ended' : 'sales', at = $(box).children[slot[box]++];
    if (at !== root) $(box).insertBefore(root, at || null);
  }
  const ended = s.products.filter((p) => p.folded).length;
  $('endedSection').hidden = ended === 0;
  setText($('endedCount'), ended + (ended === 1 ? ' sale' : ' sales') + ', folded: click one to unfold');
};
events.addEventListener('history', (e) => {
  const h = JSON.parse(e.data);
  span = h.spanMs;
  history = h.points;
});
events.onerror = () => { setText($('clock'), 'reconnecting…'); };
$('logout').addEventListener('click', async () => {
  events.close(); await fetch('/admin/dashboard/logout', { method: 'POST' }); location.reload();
});
`;
