/**
 * The dashboard's two pages, plain HTML with an inline module (dashboard-client.ts): no build
 * step, no dependency. The page renders every snapshot of /admin/dashboard/stream (EventSource,
 * which reconnects by itself); figures carry data-testid attributes for the browser test.
 */
import { DASHBOARD_CLIENT } from './dashboard-client.js';
import { DASHBOARD_DROP_CLIENT } from './dashboard-drop-client.js';
import { DASHBOARD_PANELS_CLIENT } from './dashboard-panels-client.js';

const STYLE = `
  :root { font-family: system-ui, sans-serif; color: #1d2433; background: #f4f6fa; }
  body { margin: 0; padding: 14px 24px; }
  header { display: flex; align-items: baseline; gap: 16px; margin-bottom: 10px; }
  h1 { font-size: 20px; margin: 0; flex: 1; } h2 { font-size: 14px; margin: 12px 0 6px; }
  nav { display: flex; gap: 14px; align-items: baseline; } nav a { color: #1d4ed8; }
  .tiles { display: grid; grid-template-columns: repeat(auto-fit, minmax(150px, 1fr)); gap: 10px; }
  .tile, .card, details.sale { background: #fff; border-radius: 8px; padding: 8px 12px; box-shadow: 0 1px 2px #0002; }
  .tile b { display: block; font-size: 22px; } .tile span { color: #667; font-size: 12px; }
  .figure-row { display: flex; align-items: center; justify-content: space-between; gap: 6px; } .figure-row button { font-size: 11px; padding: 1px 6px; }
  .charts { display: grid; grid-template-columns: 1fr 1fr 300px; gap: 10px; margin-top: 10px; }
  canvas { display: block; width: 100%; height: 130px; }
  table.kinds { width: 100%; border-collapse: collapse; font-size: 12px; }
  table.kinds td, table.kinds th { padding: 1px 4px; text-align: right; font-weight: normal; }
  table.kinds td:first-child, table.kinds th:first-child { text-align: left; }
  .swatch { display: inline-block; width: 9px; height: 9px; border-radius: 2px; margin-right: 5px; }
  .sales { display: grid; grid-template-columns: repeat(auto-fill, minmax(420px, 1fr)); gap: 10px; margin-top: 10px; align-items: start; }
  /* a big heat map spans the row (a 1,024-cell map is then ~11 rows); small cards fill the gaps */
  .sales { grid-auto-flow: row dense; } details.sale.wide { grid-column: 1 / -1; }
  details.sale summary { cursor: pointer; font-size: 14px; line-height: 1.6; }
  details.sale summary h3 { display: inline; font-size: 15px; margin: 0 6px 0 0; }
  .badge { font-size: 11px; padding: 1px 6px; border-radius: 9px; color: #fff; background: #667; }
  .badge.live { background: #15803d; } .badge.upcoming { background: #b45309; }
  .badge.sold-out { background: #b42318; } .badge.ended { background: #667; }
  .badge.paused { background: #7c3aed; } .badge.open { background: #15803d; } .badge.lobby { background: #b45309; }
  /* a sale's controls are always shown on its unfolded card: a touch screen has no hover, and a
     control that appears only under the pointer cannot be reached by a tap or the Tab key */
  .controls { margin: 4px 0; font-size: 12px; display: flex; flex-wrap: wrap; gap: 4px; align-items: center; } .controls[hidden] { display: none; }
  .controls button, table.rooms button { font-size: 12px; padding: 2px 8px; min-height: 28px; }
  .controls input { min-height: 28px; box-sizing: border-box; }
  table.rooms { width: 100%; border-collapse: collapse; font-size: 13px; background: #fff; border-radius: 8px; }
  table.rooms td, table.rooms th { padding: 3px 6px; text-align: right; } table.rooms td:first-child, table.rooms th:first-child { text-align: left; }
  .heat { display: grid; grid-template-columns: repeat(auto-fill, 16px); grid-auto-rows: 16px; gap: 2px; margin: 6px 0; }
  .heat.small { grid-template-columns: repeat(auto-fill, 10px); grid-auto-rows: 10px; }
  /* an outline, so a white cell (no unit seeded) shows on the white card, as in the legend */
  .heat i { border-radius: 2px; background: #e5e7eb; box-shadow: inset 0 0 0 1px #0000001f; }
  .legend i { display: inline-block; width: 10px; height: 10px; border-radius: 2px; vertical-align: -1px; margin: 0 2px 0 8px; box-shadow: inset 0 0 0 1px #0000001f; }
  .muted { color: #667; font-size: 12px; } .when { font-weight: 600; } .soldout { color: #b42318; }
  form { max-width: 360px; } input, button { font: inherit; padding: 4px 10px; } .error { color: #b42318; }
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

export interface DashboardLinks {
  /** Bull Board, when this process mounts it */
  queues?: string | undefined;
}

export function dashboardPage(links: DashboardLinks = {}): string {
  const board = links.queues
    ? `<a href="${links.queues}" data-testid="link-queues">Bull Board</a>`
    : '';
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>seckill · live</title>
<style>${STYLE}</style></head><body>
<header>
  <h1>seckill · live sales <span class="muted" id="clock" data-testid="clock">connecting…</span></h1>
  <nav><input id="operator" data-testid="operator" size="12" placeholder="who (your name)" title="sent as X-Operator with the controls: the audit log says who">${board}<a href="/metrics" data-testid="link-metrics">/metrics</a><button id="fairnessToggle" type="button" aria-expanded="false" aria-controls="fairnessSection" data-testid="fairness-toggle" hidden>Fairness</button><button id="logout">Log out</button></nav>
</header>
<div class="tiles">
  <div class="tile"><b data-testid="rate-accepted" id="accepted">–</b><span id="window">accepted / s</span></div>
  <div class="tile"><b data-testid="rate-refused" id="refused">–</b><span>refused / s (by kind below)</span></div>
  <div class="tile"><b id="lat">–</b><span>POST /seckill p50 / p99 ms</span></div>
  <div class="tile"><b id="queue" data-testid="persistence-queue">–</b><span title="BullMQ jobs of orders on their way to PostgreSQL: waiting / active / delayed / failed">order-persistence queue (w / a / d / f)</span></div>
  <div class="tile"><b data-testid="outbox" id="outbox">–</b><span>outbox lag (orders)</span></div>
  <div class="tile"><b data-testid="persisted" id="persisted">–</b><span>units persisted</span></div>
  <div class="tile"><div class="figure-row"><b data-testid="webhooks" id="webhooks">–</b><button id="webhooksRetry" data-testid="webhooks-retry" title="every active endpoint's lanes waiting for their next attempt are tried now (POST /admin/webhook-endpoints/:id/retry)">Retry now</button></div><span>webhook orders pending / dead-lettered</span>
    <span class="muted" id="webhooksRetryStatus" data-testid="webhooks-retry-status"></span></div>
</div>
<div class="charts">
  <div class="card"><span class="muted">accepted / s, last 2 min <span id="acceptedMax"></span></span><canvas id="acceptedChart"></canvas></div>
  <div class="card"><span class="muted">refused / s by kind, last 2 min <span id="refusedMax"></span></span><canvas id="refusedChart"></canvas></div>
  <div class="card"><table class="kinds" data-testid="refusals"><thead><tr><th>POST /seckill</th><th>/ s</th><th>total</th></tr></thead><tbody id="kinds"></tbody></table></div>
</div>
<section id="roomsSection" hidden><h2>Waiting rooms <span class="muted" id="estimateError" data-testid="estimate-error"></span></h2>
  <table class="rooms" data-testid="rooms"><thead><tr><th>product</th><th>state</th><th>in line</th><th>admitted / s</th>
  <th>seats taken</th><th>abandoned</th><th>sold out while waiting</th><th>pace</th></tr></thead><tbody id="rooms"></tbody></table></section>
<div class="sales" id="sales" data-testid="sales"></div>
<section id="drawsSection" hidden><h2>Draws <span class="muted">(read every 5 s)</span></h2>
  <table class="rooms" data-testid="draws"><thead><tr><th>product</th><th>state</th><th>entries</th><th>the freeze</th><th>the beacon</th>
  <th>winners</th><th>bought</th><th>passed on</th><th>waitlist</th></tr></thead><tbody id="draws"></tbody></table></section>
<section id="fairnessSection" hidden><h2>Fairness <span class="muted" id="fairnessSummary" data-testid="fairness-summary"></span></h2>
  <table class="rooms" data-testid="fairness"><thead><tr><th>product</th><th>E tried</th><th>F flagged</th><th>U sold</th>
  <th>u_F flagged bought</th><th>mu [band]</th><th>A [band]</th><th>top 1 %</th><th>clusters</th></tr></thead><tbody id="fairness"></tbody></table></section>
<section id="endedSection" hidden><h2>Ended <span class="muted" id="endedCount"></span></h2>
  <div class="sales" id="ended" data-testid="ended"></div></section>
<script type="module">${DASHBOARD_CLIENT}${DASHBOARD_DROP_CLIENT}${DASHBOARD_PANELS_CLIENT}</script></body></html>`;
}
