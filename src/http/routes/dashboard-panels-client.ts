/**
 * The dashboard page's script, the panels' part (appended to dashboard-client.ts's, whose snapshot
 * handler calls renderPanels): a row per draw (entries, the freeze's root and round R, the
 * beacon, winners / bought / the cascade's passes, the waitlist) and per sale's fairness (E, F,
 * U, u_F, mu with its band, A with its band, the top 1 %'s share, the clusters). Plain JS in a
 * string: no template literals.
 */
export const DASHBOARD_PANELS_CLIENT = String.raw`
const short = (hex) => (hex ? hex.slice(0, 12) + '…' : '–');
const fixed = (n, d) => (n === null || n === undefined ? '–' : Number(n).toFixed(d));
const at = (iso) => (iso ? new Date(iso).toLocaleTimeString('en-GB') : '–');

/** Rows keyed by product, each cell by its data-testid; rows of products gone are dropped. */
function panelRows(body, items, cells, prefix) {
  const rows = body.rows;
  const want = items.map((x) => x.productId);
  if (rows.length !== want.length || want.some((id, i) => rows[i].dataset.product !== id)) {
    body.innerHTML = want.map((id) => '<tr data-product="' + esc(id) + '"><td>' + esc(id) + '</td>' +
      cells.map((c) => '<td data-testid="' + prefix + '-' + c + '-' + esc(id) + '"></td>').join('') + '</tr>').join('');
  }
  return (id, c) => body.querySelector('[data-testid="' + prefix + '-' + c + '-' + id + '"]');
}

const DRAW_CELLS = ['state', 'entries', 'freeze', 'beacon', 'winners', 'bought', 'passes', 'waitlist'];
const FAIR_CELLS = ['identities', 'flagged', 'units', 'flagged-units', 'fair-share', 'advantage', 'top1', 'clusters'];

let fairnessOpen = false;
$('fairnessToggle').addEventListener('click', () => {
  fairnessOpen = !fairnessOpen;
  $('fairnessToggle').setAttribute('aria-expanded', String(fairnessOpen));
  $('fairnessSection').hidden = !fairnessOpen;
});

function renderPanels(s) {
  $('drawsSection').hidden = s.draws.length === 0;
  const d = panelRows($('draws'), s.draws, DRAW_CELLS, 'draw');
  for (const x of s.draws) {
    setText(d(x.productId, 'state'), x.state + ' · epoch ' + x.epoch);
    setText(d(x.productId, 'entries'), num(x.entries) + (x.removed ? ' (' + num(x.removed) + ' screened out)' : ''));
    setText(d(x.productId, 'freeze'), x.root ? 'root ' + short(x.root) + ' · round ' + x.round + ' at ' + at(x.roundAt) : 'closes ' + at(x.entriesCloseAt));
    setText(d(x.productId, 'beacon'), x.randomness ? short(x.randomness) + ' · drawn ' + at(x.drawnAt) : x.round ? 'waiting for round ' + x.round : '–');
    setText(d(x.productId, 'winners'), num(x.winners));
    setText(d(x.productId, 'bought'), num(x.bought));
    setText(d(x.productId, 'passes'), num(x.passes));
    setText(d(x.productId, 'waitlist'), num(x.waitlist));
  }
  // shown when asked (the header's button): a row per sale would push the sales below one screen
  const above = s.fairness.filter((x) => x.advantageBand && x.advantage !== null && x.advantage > x.advantageBand[1]);
  $('fairnessToggle').hidden = s.fairness.length === 0;
  setText($('fairnessToggle'), 'Fairness' + (above.length ? ' · ' + above.length + ' above the band' : ''));
  $('fairnessSection').hidden = s.fairness.length === 0 || !fairnessOpen;
  setText($('fairnessSummary'), plural(s.fairness.length, 'sale') + ' · bots’ share against a fair draw, read every 5 s · ' +
    (above.length ? 'above the band: ' + above.map((x) => x.productId).join(', ') : 'none above its band'));
  const f = panelRows($('fairness'), s.fairness, FAIR_CELLS, 'fair');
  for (const x of s.fairness) {
    setText(f(x.productId, 'identities'), num(x.identities));
    setText(f(x.productId, 'flagged'), num(x.flagged));
    setText(f(x.productId, 'units'), num(x.units));
    setText(f(x.productId, 'flagged-units'), num(x.flaggedUnits));
    setText(f(x.productId, 'fair-share'), fixed(x.fairShare, 2) + ' [' + x.band[0] + ', ' + x.band[1] + ']');
    setText(f(x.productId, 'advantage'), x.advantage === null ? '–' : fixed(x.advantage, 2) +
      (x.advantageBand ? ' [' + fixed(x.advantageBand[0], 2) + ', ' + fixed(x.advantageBand[1], 2) + ']' : ''));
    setText(f(x.productId, 'top1'), Math.round(x.top1PercentShare * 100) + ' %');
    setText(f(x.productId, 'clusters'), num(x.clusters) + (x.topClusters.length ? ': ' + x.topClusters.map((c) =>
      c.by + ' ' + c.key + ' (' + num(c.identities) + ' identities, ' + plural(c.units, 'unit') + ')').join(', ') : ''));
  }
}
`;
