/**
 * The dashboard's two pages, plain HTML with an inline module: no build step, no dependency. The
 * page renders every snapshot of /admin/dashboard/stream (EventSource, which reconnects by
 * itself); numbers carry data-testid attributes for the browser test.
 */

const STYLE = `
  :root { font-family: system-ui, sans-serif; color: #1d2433; background: #f4f6fa; }
  body { margin: 0; padding: 20px 28px; }
  h1 { font-size: 20px; margin: 0 0 14px; } h2 { font-size: 16px; margin: 0 0 8px; }
  .tiles { display: grid; grid-template-columns: repeat(auto-fill, minmax(150px, 1fr)); gap: 10px; }
  .tile, .card { background: #fff; border-radius: 8px; padding: 10px 14px; box-shadow: 0 1px 2px #0002; }
  .tile b { display: block; font-size: 22px; } .tile span { color: #667; font-size: 12px; }
  .cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(420px, 1fr)); gap: 14px; margin-top: 16px; }
  .seg { display: grid; grid-template-columns: 84px 1fr 60px; align-items: center; gap: 8px; font-size: 12px; margin: 3px 0; }
  .bar { height: 12px; background: #e3e8f0; border-radius: 3px; overflow: hidden; }
  .bar i { display: block; height: 100%; background: #3b82f6; }
  .muted { color: #667; font-size: 12px; } .soldout { color: #b42318; font-weight: 600; }
  canvas { width: 100%; height: 60px; } form { max-width: 360px; }
  input, button { font: inherit; padding: 6px 10px; } .error { color: #b42318; }
`;

export function loginPage(): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>seckill · log in</title>
<style>${STYLE}</style></head><body>
<h1>seckill dashboard</h1>
<form id="login">
  <p class="muted">The admin token (ADMIN_TOKEN; <code>seckill up</code> keeps it in DATA_DIR/admin-token).
  It is sent once; the session is an HttpOnly cookie.</p>
  <input id="token" type="password" autocomplete="current-password" placeholder="admin token" required>
  <button type="submit">Log in</button>
  <p id="error" class="error" data-testid="login-error"></p>
</form>
<script type="module">
document.getElementById('login').addEventListener('submit', async (e) => {
  e.preventDefault();
  const res = await fetch('/admin/dashboard/login', {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ token: document.getElementById('token').value }),
  });
  if (res.status === 204) return location.reload();
  // a wrong token says so; anything else is shown as what it is (400, 429, 503 ...)
  let problem = {};
  try { problem = await res.json(); } catch {}
  const retry = res.headers.get('retry-after');
  document.getElementById('error').textContent = res.status === 401 ? 'Wrong admin token'
    : res.status + ' ' + (problem.title || res.statusText) + (problem.detail ? ': ' + problem.detail : '')
      + (retry ? ' (retry in ' + retry + ' s)' : '');
});
</script></body></html>`;
}

export function dashboardPage(): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>seckill · live</title>
<style>${STYLE}</style></head><body>
<h1>seckill · live sale <span class="muted" id="clock" data-testid="clock">connecting…</span>
  <button id="logout" style="float:right">Log out</button></h1>
<div class="tiles">
  <div class="tile"><b data-testid="rate-accepted" id="accepted">–</b><span>accepted / s</span></div>
  <div class="tile"><b id="r409">–</b><span>409 / s (sold out, limit)</span></div>
  <div class="tile"><b id="r429">–</b><span>429 / s (rate limited)</span></div>
  <div class="tile"><b id="r503">–</b><span>503 / s (busy, shed)</span></div>
  <div class="tile"><b id="lock">–</b><span>lock timeouts / s</span></div>
  <div class="tile"><b id="lat">–</b><span>p50 / p99 ms</span></div>
  <div class="tile"><b id="queue">–</b><span>queue waiting / active / delayed / failed</span></div>
  <div class="tile"><b data-testid="outbox" id="outbox">–</b><span>outbox lag (orders)</span></div>
  <div class="tile"><b data-testid="persisted" id="persisted">–</b><span>units persisted</span></div>
</div>
<div class="card" style="margin-top:14px"><span class="muted">accepted / s, last minute</span><canvas id="spark" width="900" height="60"></canvas></div>
<div class="cards" id="products"></div>
<script type="module">
const $ = (id) => document.getElementById(id);
const fmt = (n, d = 0) => (n === null || n === undefined ? '–' : Number(n).toFixed(d));
const esc = (s) => String(s).replace(/[&<>"']/g, (c) => '&#' + c.charCodeAt(0) + ';');
const history = [];
function spark() {
  const c = $('spark'), g = c.getContext('2d'), max = Math.max(1, ...history);
  g.clearRect(0, 0, c.width, c.height); g.strokeStyle = '#3b82f6'; g.lineWidth = 2; g.beginPath();
  history.forEach((v, i) => { const x = (i / 119) * c.width, y = c.height - (v / max) * (c.height - 4) - 2;
    i ? g.lineTo(x, y) : g.moveTo(x, y); });
  g.stroke();
}
function product(p) {
  const top = Math.max(1, ...p.segments.map((s) => s.stock + s.sold));
  const orders = Object.entries(p.orders).map(([k, v]) => esc(k) + ' ' + v).join(' · ') || 'no order rows yet';
  const soldOut = p.soldOutAt ? '<span class="soldout">sold out at ' + new Date(p.soldOutAt).toLocaleTimeString() + '</span>' : esc(p.status);
  return '<div class="card" data-testid="product-' + esc(p.productId) + '"><h2>' + esc(p.productId) +
    ' <span class="muted">epoch ' + p.epoch + '</span></h2>' +
    '<p><b data-testid="remaining-' + esc(p.productId) + '">' + p.remaining + '</b> of ' + p.total +
    ' left · <b data-testid="accepted-' + esc(p.productId) + '">' + (p.total - p.remaining) + '</b> sold · ' + soldOut + '</p>' +
    '<p class="muted">orders: ' + orders + '</p>' +
    p.segments.map((s) => '<div class="seg"><span>segment ' + s.segment + '</span><span class="bar"><i style="width:' +
      ((100 * s.stock) / top).toFixed(1) + '%"></i></span><span data-testid="segment-' + esc(p.productId) + '-' + s.segment +
      '">' + s.stock + '</span>' + (s.shard ? '<span class="muted" style="grid-column:2/4">' + esc(s.shard) + '</span>' : '') +
      '</div>').join('') + '</div>';
}
const events = new EventSource('/admin/dashboard/stream');
events.onmessage = (e) => {
  const s = JSON.parse(e.data);
  $('clock').textContent = 'updated ' + new Date(s.at).toLocaleTimeString();
  $('accepted').textContent = fmt(s.rates.accepted); $('r409').textContent = fmt(s.rates.refused409);
  $('r429').textContent = fmt(s.rates.limited429); $('r503').textContent = fmt(s.rates.busy503);
  $('lock').textContent = fmt(s.rates.lockTimeouts, 1);
  $('lat').textContent = fmt(s.latency.p50, 1) + ' / ' + fmt(s.latency.p99, 1);
  const q = s.queue; $('queue').textContent = [q.waiting, q.active, q.delayed, q.failed].map((n) => fmt(n)).join(' / ');
  $('outbox').textContent = s.outboxBacklog; $('persisted').textContent = s.persistedTotal;
  history.push(s.rates.accepted); if (history.length > 120) history.shift(); spark();
  $('products').innerHTML = s.products.map(product).join('');
};
events.onerror = () => { $('clock').textContent = 'reconnecting…'; };
$('logout').addEventListener('click', async () => {
  events.close(); await fetch('/admin/dashboard/logout', { method: 'POST' }); location.reload();
});
</script></body></html>`;
}
