/** What Prometheus shows the operator: a dashboard panel's query, an alert firing. */
import type { Observed, Panel } from './observe.js';
import type { ActiveAlert } from './prometheus.js';
import { waitFor } from './wait.js';

export const panel = (o: Observed, title: string): Panel => {
  const p = o.panels.find((x) => x.title === title);
  if (!p) throw new Error(`no dashboard panel "${title}"`);
  return p;
};

export async function waitFiring(
  o: Observed,
  alertname: string,
  match: Record<string, string> = {},
  timeoutMs = 120_000,
): Promise<ActiveAlert> {
  let seen: ActiveAlert[] = [];
  return waitFor(
    `${alertname} ${JSON.stringify(match)} firing`,
    async () => {
      seen = await o.prom.alerts();
      return seen.find(
        (a) =>
          a.state === 'firing' &&
          a.labels.alertname === alertname &&
          Object.entries(match).every(([k, v]) => a.labels[k] === v),
      );
    },
    timeoutMs,
    500,
    () => seen.map((a) => `${a.labels.alertname}:${a.state}`).join(', ') || 'no alerts',
  );
}

/** Each query of the panel `title` (a panel may have several), its value for `productId`. */
export async function panelValues(
  o: Observed,
  title: string,
  productId: string,
): Promise<Array<number | undefined>> {
  const queries = o.panels.filter((x) => x.title === title);
  if (queries.length === 0) throw new Error(`no dashboard panel "${title}"`);
  return Promise.all(
    queries.map(
      async (q) => (await o.prom.query(q.expr)).find((s) => s.labels.product === productId)?.value,
    ),
  );
}
