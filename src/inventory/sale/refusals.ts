/**
 * What a refusing deduct reply means for the purchase: one place that turns each reply into the
 * sale's refusal (plain data), for the home segment and the spill alike.
 */
import type { ProductView } from '../catalogue/catalogue.js';
import type { SaleRefusal } from '../errors.js';
import type { DeductReply } from '../protocol.js';
import { PAUSED_STARTS_AT } from '../records/segment-state.js';

/** The product was reseeded under the purchase: reload it and try again. */
export const STALE = 'stale';

/**
 * The refusal of a deduct reply that refused the purchase (not ok, spill or empty), or
 * {@link STALE} when the purchase should be tried again on a fresh view.
 */
export function refusalOf(
  view: ProductView,
  deducted: DeductReply,
  quantity: number,
): SaleRefusal | typeof STALE {
  switch (deducted.code) {
    case 'limit': {
      const limit = `the limit of ${view.limitPerUser} per shopper for "${view.id}"`;
      return {
        code: 'limit-reached',
        message:
          deducted.units === 0
            ? `${quantity} units are more than ${limit}`
            : `already bought ${deducted.units}: ${quantity} more would pass ${limit}`,
        ...(deducted.lastOrderId && { orderId: deducted.lastOrderId }),
      };
    }
    case 'voided':
      return {
        code: 'order-voided',
        message: 'this order id was given up after its purchase got no answer; buy again',
      };
    case 'claim-busy':
      return {
        code: 'purchase-in-progress',
        message: 'another purchase of this product by you is still being completed',
        orderId: deducted.orderId,
      };
    case 'not-started':
      // a paused sale's segments start at the paused mark (drop/controls.ts)
      if (deducted.startsAt >= PAUSED_STARTS_AT) return pausedRefusal(view);
      return {
        code: 'not-started',
        message: `the sale starts at ${new Date(deducted.startsAt).toISOString()}`,
        at: deducted.startsAt,
      };
    case 'ended':
      return {
        code: 'ended',
        message: `the sale ended at ${new Date(deducted.endsAt).toISOString()}`,
        at: deducted.endsAt,
      };
    case 'stale-epoch':
    case 'unknown':
      return STALE;
    case 'stale-fence':
      return {
        code: 'lock-timeout',
        message: 'the segment lock was lost before the deduct',
      };
    default:
      throw new Error(`deduct reply ${deducted.code} is not a refusal`);
  }
}

/** Refused without a command: the segment's Redis shard failed a moment ago. Nothing was sold. */
export function shardUnavailable(productId: string, seg: number, shard = 'a shard'): SaleRefusal {
  return {
    code: 'shard-unavailable',
    message:
      `segment ${seg} of "${productId}" lives on Redis shard ${shard}, which is not answering; ` +
      'nothing was sold: try again in a moment',
  };
}

/** The sold-out refusal of each product view (a reseed makes a new view). */
const soldOut = new WeakMap<{ id: string }, SaleRefusal>();

/**
 * One sold-out refusal per product, not one per request: after a sell-out nearly every request
 * of the crowd gets it (a refusal is never changed once made).
 */
export function soldOutRefusal(view: { id: string }): SaleRefusal {
  let known = soldOut.get(view);
  if (!known) {
    known = { code: 'sold-out', message: `"${view.id}" is sold out` };
    soldOut.set(view, known);
  }
  return known;
}

/** The paused refusal of each product view, made once. */
const paused = new WeakMap<{ id: string }, SaleRefusal>();

/** An operator paused the sale: refused until they resume it. */
export function pausedRefusal(view: { id: string }): SaleRefusal {
  let known = paused.get(view);
  if (!known) {
    known = {
      code: 'sale-paused',
      message: `the sale of "${view.id}" is paused by the shop: try again when it resumes`,
    };
    paused.set(view, known);
  }
  return known;
}

/** The window refusals of each product view, made once (a view's window never changes). */
const outsideWindow = new WeakMap<
  { id: string },
  { ended?: SaleRefusal; notStarted?: SaleRefusal }
>();

/** The refusal the deduct gives outside the sale window, made once per view. */
export function windowRefusal(
  view: Pick<ProductView, 'id' | 'startsAt' | 'endsAt'>,
  code: 'ended' | 'not-started',
): SaleRefusal {
  let made = outsideWindow.get(view);
  if (!made) outsideWindow.set(view, (made = {}));
  return code === 'ended'
    ? (made.ended ??= refusalOf(
        view as ProductView,
        { code, endsAt: view.endsAt },
        1,
      ) as SaleRefusal)
    : (made.notStarted ??= refusalOf(
        view as ProductView,
        { code, startsAt: view.startsAt },
        1,
      ) as SaleRefusal);
}
