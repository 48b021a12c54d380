/**
 * The draw's events, as a shop reads them on the feed and its webhooks (docs/draw.md#events):
 * `draw.frozen` (the list is frozen: its count, root and round), `draw.drawn` (the beacon came:
 * its randomness, the winners' count), `draw.won` (a rank was given a purchase right) and
 * `draw.passed-on` (that rank is past the first winners: a unit passed down the waitlist to it).
 * One subject per draw, so an endpoint is sent them in the order they were published. Each id
 * names its moment or rank: publishing again is a no-op.
 */
import type { DrawRecord } from '../../db/draws-repository.js';
import type { ProductView } from '../catalogue/catalogue.js';

/** A product event of the draws' family (events/feed's ProductEventInput, structurally). */
export interface DrawEvent {
  id: string;
  productId: string;
  type: string;
  subject: string;
  data: Record<string, unknown>;
}

export const DRAW_EVENT_SOURCE = '/seckill/draws';

const subjectOf = (view: ProductView) => `${view.id}/draws/${view.epoch}`;

export function drawMoment(
  what: 'frozen' | 'drawn',
  view: ProductView,
  record: DrawRecord,
): DrawEvent {
  const type = `draw.${what}`;
  const common = { productId: view.id, epoch: view.epoch, entries: record.entries };
  const data =
    what === 'frozen'
      ? {
          ...common,
          root: record.root,
          rulesHash: record.rulesHash,
          removed: record.removed,
          chain: (record.chain as { hash: string }).hash,
          round: record.round,
          roundAt: record.roundAt.toISOString(),
          frozenAt: record.frozenAt.toISOString(),
        }
      : {
          ...common,
          round: record.round,
          randomness: record.beacon!.randomness,
          winners: record.winners,
        };
  return {
    id: `${type}:${view.id}:${view.epoch}`,
    productId: view.id,
    type,
    subject: subjectOf(view),
    data,
  };
}

/** `draw.won` for each rank given a right; before it `draw.passed-on` for one past the winners. */
export function rankEvents(
  view: ProductView,
  record: DrawRecord,
  ranked: ReadonlyArray<{ rank: number; entryId: string; userId: string }>,
): DrawEvent[] {
  return ranked.flatMap(({ rank, entryId, userId }) => {
    const data = { productId: view.id, epoch: view.epoch, rank, entryId, userId };
    const event = (type: string): DrawEvent => ({
      id: `${type}:${view.id}:${view.epoch}:${rank}`,
      productId: view.id,
      type,
      subject: subjectOf(view),
      data,
    });
    return rank > record.winners
      ? [event('draw.passed-on'), event('draw.won')]
      : [event('draw.won')];
  });
}
