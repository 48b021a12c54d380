/**
 * A refused purchase's shopper noted as having tried the sale (the fairness report's E), in
 * memory and after the answer is made: no await on the purchase path, no round trip.
 */
import type { PurchaseCall } from './purchase.js';
import type { PurchaseOutcome } from './outcome.js';

/** Notes a shopper as having tried `productId`'s sale (the fairness notes, for a plain sale). */
export type NoteTried = (productId: string, userId: string, ip: () => string) => void;

const NOTHING = () => undefined;

/**
 * Notes the shopper of `outcome` when it refused (anything but a sale): an identity still being
 * checked (a JWT) is noted once checked, and dropped if it fails.
 */
export function noteRefused(
  tried: NoteTried | undefined,
  call: Pick<PurchaseCall, 'productId' | 'shopper' | 'ip'>,
  outcome: PurchaseOutcome,
): void {
  if (!tried || (outcome.kind === 'answer' && outcome.answer.kind !== 'refused')) return;
  const { productId, shopper, ip } = call;
  if (typeof shopper === 'string') tried(productId, shopper, ip);
  else shopper.then((userId) => tried(productId, userId, ip), NOTHING);
}
