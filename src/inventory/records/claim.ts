/**
 * A spill claim: a shopper's purchase in flight while its units are taken from another segment
 * (lua/deduct-7.lua puts it in the claims hash of the home segment; lua/claimSettle-2.lua or the
 * sweeper ends it). Field = user id, value `<orderId>|<quantity>|<server ms>`.
 */
export interface SpillClaim {
  orderId: string;
  quantity: number;
  /** Redis server time when the claim was placed, ms */
  at: number;
}

export function decodeClaim(raw: string | null | undefined): SpillClaim | null {
  if (raw === null || raw === undefined) return null;
  const [orderId, quantity, at] = raw.split('|');
  if (orderId === undefined || quantity === undefined || at === undefined) {
    throw new Error(`not a spill claim: ${JSON.stringify(raw)}`);
  }
  return { orderId, quantity: Number(quantity), at: Number(at) };
}

export function encodeClaim(claim: SpillClaim): string {
  return `${claim.orderId}|${claim.quantity}|${claim.at}`;
}
