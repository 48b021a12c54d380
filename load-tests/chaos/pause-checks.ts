/**
 * The chaos run's check of an operator's pause (room-pause.ts pauses the waiting-room product and
 * resumes it during the sale), from the history and the order rows alone, like checker.ts:
 *   - no-sale-while-paused: from the first 200 answer to a pause until the first try of the
 *     resume was sent, the product is paused for certain (every segment refused deducts before
 *     the pause answered). No purchase sent after the pause answered may be acknowledged before
 *     the resume was sent, and no order row may have been sold (deducted_at, Redis's clock on
 *     this machine) in between: the rows catch a sale whose answer was lost too.
 * No I/O here, so tests feed it made-up histories.
 */
import type { ControlOp, HistoryEntry, InvariantResult, OrderRow } from './history.js';

/** When a product was certainly paused, in ms of the run: (from, to). */
export interface PauseWindow {
  product: string;
  /** the completion of the first pause answered 200 */
  from: number;
  /** the invocation of the first resume tried after it (it may have run at once); none: never */
  to: number;
  pauseOp: number;
  resumeOp?: number;
}

/**
 * Redis stamps a sale with its own clock, read at the deduct: a sale stamped at most 1 ms after
 * the pause's answer was read may still precede it (both clocks counted in whole ms).
 */
const CLOCK_GRAIN_MS = 1;

export function pauseWindows(history: HistoryEntry[], product: string): PauseWindow[] {
  const controls = history
    .filter((h): h is ControlOp => h.type === 'control' && h.product === product)
    .sort((a, b) => a.invokeMs - b.invokeMs);
  const windows: PauseWindow[] = [];
  for (const pause of controls) {
    if (pause.action !== 'pause' || pause.status !== 200) continue;
    const open = windows.at(-1);
    // a pause answered again while already paused changes nothing: the window is the first's
    if (open && pause.invokeMs < open.to) continue;
    const resume = controls.find((c) => c.action === 'resume' && c.invokeMs >= pause.completeMs);
    windows.push({
      product,
      from: pause.completeMs,
      to: resume?.invokeMs ?? Infinity,
      pauseOp: pause.op,
      ...(resume && { resumeOp: resume.op }),
    });
  }
  return windows;
}

const span = (w: PauseWindow) =>
  `paused from ${w.from} ms (op ${w.pauseOp} answered) to ${w.to === Infinity ? 'the end' : `${w.to} ms (op ${w.resumeOp} sent)`}`;

export function noSaleWhilePaused(
  history: HistoryEntry[],
  o: { product: string; orders: OrderRow[] },
): InvariantResult {
  const windows = pauseWindows(history, o.product);
  const fail = (counterExample: string): InvariantResult => ({
    name: 'no-sale-while-paused',
    ok: false,
    counterExample,
  });
  for (const w of windows) {
    const sold = history.find(
      (h) =>
        h.type === 'purchase' &&
        h.product === o.product &&
        h.outcome === 'ok' &&
        h.invokeMs >= w.from &&
        h.completeMs < w.to,
    );
    if (sold?.type === 'purchase')
      return fail(
        `op ${sold.op} user ${sold.user} key ${sold.key}: sent at ${sold.invokeMs} ms, acknowledged at ${sold.completeMs} ms, ${span(w)}`,
      );
    const row = o.orders.find(
      (r) =>
        r.product === o.product &&
        r.deductedMs !== undefined &&
        r.deductedMs > w.from + CLOCK_GRAIN_MS &&
        r.deductedMs < w.to,
    );
    if (row)
      return fail(
        `order ${row.id} user ${row.user}: sold at ${row.deductedMs!.toFixed(1)} ms by Redis's clock, ${span(w)}`,
      );
  }
  const tried = history.some((h) => h.type === 'control' && h.product === o.product);
  if (tried && windows.length === 0)
    return fail(`no pause of ${o.product} was answered 200: the run never paused it for certain`);
  const inside = (at: number) => windows.some((w) => at >= w.from && at < w.to);
  const purchases = history.filter(
    (h) => h.type === 'purchase' && h.product === o.product && inside(h.invokeMs),
  );
  return {
    name: 'no-sale-while-paused',
    ok: true,
    ...(windows.length > 0 && {
      paused: {
        ms: windows.reduce((n, w) => n + (w.to === Infinity ? 0 : w.to - w.from), 0),
        purchases: purchases.length,
        refused: purchases.filter((h) => h.type === 'purchase' && h.code === 'sale-paused').length,
        roomAnswers: history.filter(
          (h) => h.type === 'room' && h.product === o.product && h.state === 'paused',
        ).length,
      },
    }),
  };
}
