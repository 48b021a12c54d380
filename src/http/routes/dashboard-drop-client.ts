/**
 * The dashboard page's script, the drop's half (appended to dashboard-client.ts's, whose snapshot
 * handler calls renderRooms and whose cards call controlBar): the waiting rooms' table, the
 * operator's controls on each sale (pause, resume, end now, units, the room's pace), and the
 * webhook tile's "Retry now", sent to the admin API with the session cookie and the name in the
 * page's "who" box (X-Operator, kept in localStorage), so the audit log says who pressed what.
 * Plain JS in a string: no template literals.
 */
export const DASHBOARD_DROP_CLIENT = String.raw`
const operator = $('operator');
operator.value = localStorage.getItem('seckill-operator') || '';
operator.addEventListener('change', () => localStorage.setItem('seckill-operator', operator.value.trim()));

/** One control: the admin API's answer in words (what it did, or the problem). */
async function control(id, path, method, body) {
  const headers = { 'content-type': 'application/json' };
  const who = operator.value.trim();
  if (who) headers['x-operator'] = who;
  const res = await fetch('/admin/products/' + encodeURIComponent(id) + '/' + path, {
    method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  let out = {};
  try { out = await res.json(); } catch {}
  if (!res.ok) return res.status + ' ' + (out.title || res.statusText) + (out.detail ? ': ' + out.detail : '');
  return out.action + ': ' + (out.changed ? 'done' : 'nothing to change') +
    (out.units !== undefined ? ' (' + num(out.units) + ' units)' : '') + ' · now ' + (out.product ? out.product.status : '?');
}

/** The webhook tile's "Retry now": each active endpoint with lanes waiting tries them now. */
async function retryWebhooks() {
  const status = $('webhooksRetryStatus');
  setText(status, '…');
  const headers = { 'content-type': 'application/json' };
  const who = operator.value.trim();
  if (who) headers['x-operator'] = who;
  const res = await fetch('/admin/webhook-endpoints');
  if (!res.ok) return setText(status, res.status + ' ' + res.statusText);
  const waiting = (await res.json()).endpoints.filter((e) => e.status === 'active' && e.pending > 0);
  let lanes = 0;
  for (const e of waiting) {
    const r = await fetch('/admin/webhook-endpoints/' + encodeURIComponent(e.id) + '/retry', { method: 'POST', headers });
    if (r.ok) lanes += (await r.json()).lanes;
  }
  setText(status, waiting.length === 0 ? 'nothing waits' :
    plural(lanes, 'lane') + ' of ' + plural(waiting.length, 'endpoint') + ' tried now');
}
$('webhooksRetry').addEventListener('click', () => void retryWebhooks());

/** The controls of a sale's card: pause, resume, end now, units in or out. */
function controlBar(card, id) {
  const bar = card.root.querySelector('.controls');
  const t = (name) => 'data-testid="' + name + '-' + esc(id) + '"';
  bar.setAttribute('role', 'group');
  bar.setAttribute('aria-label', 'controls of ' + id);
  bar.innerHTML = '<button type="button" ' + t('pause') + '>Pause</button><button type="button" ' + t('resume') + '>Resume</button>' +
    '<button type="button" ' + t('end') + '>End now</button> · <input type="number" min="1" value="1" aria-label="units" ' + t('units') + ' style="width:6em">' +
    '<button type="button" ' + t('add') + '>Add units</button><button type="button" ' + t('withdraw') + '>Withdraw</button> ' +
    '<span class="muted" role="status" ' + t('control-status') + '></span>';
  const el = (name) => bar.querySelector('[data-testid="' + name + '-' + id + '"]');
  const run = async (path, body, method) => {
    setText(el('control-status'), '…');
    setText(el('control-status'), await control(id, path, method || 'POST', body));
  };
  el('pause').addEventListener('click', () => run('pause'));
  el('resume').addEventListener('click', () => run('resume'));
  el('end').addEventListener('click', () => {
    if (confirm('End the sale of ' + id + ' now? Shoppers are told it ended; it cannot be undone.')) run('end');
  });
  const n = () => Number(el('units').value);
  el('add').addEventListener('click', () => run('units', { add: n() }));
  el('withdraw').addEventListener('click', () => run('units', { withdraw: n() }));
}

/** The waiting rooms: a row per room, built once (its pace inputs keep what is typed). */
const roomRows = new Map();
function renderRooms(s) {
  $('roomsSection').hidden = s.rooms.length === 0;
  const body = $('rooms');
  const seen = new Set(s.rooms.map((r) => r.productId));
  for (const [id, row] of roomRows) if (!seen.has(id)) { row.remove(); roomRows.delete(id); }
  for (const r of s.rooms) {
    let row = roomRows.get(r.productId);
    if (!row) {
      const t = (name) => 'data-testid="room-' + name + '-' + esc(r.productId) + '"';
      row = document.createElement('tr');
      row.innerHTML = '<td>' + esc(r.productId) + '</td><td><span class="badge" ' + t('state') + '></span></td>' +
        '<td ' + t('in-line') + '></td><td ' + t('admitted-per-s') + '></td><td ' + t('seats') + '></td>' +
        '<td ' + t('abandoned') + '></td><td ' + t('sold-out-waiting') + '></td>' +
        '<td><input type="number" min="1" ' + t('pace-rate') + ' style="width:5em"> / s, <input type="number" min="1" ' +
        t('pace-max') + ' style="width:6em"> seats <button ' + t('pace') + '>Set pace</button> <span class="muted" ' + t('pace-status') + '></span></td>';
      const el = (name) => row.querySelector('[data-testid="room-' + name + '-' + r.productId + '"]');
      el('pace-rate').value = r.admitPerSecond;
      el('pace-max').value = r.maxActive;
      el('pace').addEventListener('click', async () => {
        setText(el('pace-status'), await control(r.productId, 'waiting-room', 'PATCH',
          { admitPerSecond: Number(el('pace-rate').value), maxActive: Number(el('pace-max').value) }));
      });
      row.el = el;
      roomRows.set(r.productId, row);
      body.appendChild(row);
    }
    const badge = row.el('state');
    setText(badge, r.state);
    badge.className = 'badge ' + r.state;
    setText(row.el('in-line'), num(r.inLine));
    setText(row.el('admitted-per-s'), perSecond(r.admittedPerSecond));
    setText(row.el('seats'), num(r.active) + ' / ' + num(r.maxActive));
    setText(row.el('abandoned'), num(r.abandoned));
    setText(row.el('sold-out-waiting'), num(r.soldOutWaiting));
  }
  const e = s.estimateError;
  setText($('estimateError'), e.observed === 0 ? 'estimate error: no admission compared yet' :
    'estimate error (wait minus the p50 told): ' + e.meanSeconds.toFixed(1) + ' s on average, ' +
    Math.round(e.within10s * 100) + ' % within 10 s, over ' + plural(e.observed, 'shopper'));
}
`;
