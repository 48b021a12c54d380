/**
 * The exactness checks of `npm run bench:peer`, the same for both sides: pure functions of what
 * the load generator counted and what the side's stores hold afterwards.
 */

export interface Verdict {
  ok: boolean;
  line: string;
}

/** Answers whose status is none of `expected` (a 5xx, a 429, a repeat-buyer 409...). */
export function unexpectedAnswers(status: Record<string, number>, expected: string[]): number {
  return Object.entries(status)
    .filter(([code]) => !expected.includes(code))
    .reduce((n, [, k]) => n + k, 0);
}

/**
 * A sale scenario: every unit that left the stock has exactly one order row, and the sales the
 * load generator saw answered are those units but for the requests still in flight when it
 * stopped at each deadline (their sales are real, their answers never read: at most one per
 * connection per round).
 */
export function saleVerdict(o: {
  scenario: string;
  accepted: number;
  /** units gone from the stock during the scenario */
  sold: number;
  rows: number;
  inFlightMax: number;
  unexpected: number;
  errors: number;
  /** the side's own consistency check (ours: reconciliation; the peer: stock + buyers) */
  storesAgree: boolean;
  storesNote: string;
}): Verdict {
  const cutOff = o.sold - o.accepted;
  const ok =
    o.rows === o.sold &&
    cutOff >= 0 &&
    cutOff <= o.inFlightMax &&
    o.unexpected === 0 &&
    o.errors === 0 &&
    o.storesAgree;
  return {
    ok,
    line:
      `${o.scenario}: ${ok ? 'OK' : 'VIOLATED'}: accepted ${o.accepted} (+${cutOff} cut off in flight), ` +
      `sold ${o.sold}, order rows ${o.rows}, other answers ${o.unexpected}, errors ${o.errors}, ${o.storesNote}`,
  };
}

/** A sold-out scenario: every answer a refusal, no unit sold, no order row added. */
export function soldOutVerdict(o: {
  scenario: string;
  requests: number;
  refusals: number;
  soldDuring: number;
  rowsAdded: number;
  errors: number;
  storesAgree: boolean;
  storesNote: string;
}): Verdict {
  const ok =
    o.refusals === o.requests &&
    o.soldDuring === 0 &&
    o.rowsAdded === 0 &&
    o.errors === 0 &&
    o.storesAgree;
  return {
    ok,
    line:
      `${o.scenario}: ${ok ? 'OK' : 'VIOLATED'}: ${o.refusals} refusals of ${o.requests} answers, ` +
      `sold meanwhile ${o.soldDuring}, order rows added ${o.rowsAdded}, errors ${o.errors}, ${o.storesNote}`,
  };
}
