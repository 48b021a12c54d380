/**
 * The capacity model of a flash crowd: how many instances (one core each, kept `utilisation`
 * busy) each tier needs for `rate` requests per second of which `refusalShare` are refusals
 * (sold out) and the rest accepted sales, from each tier's measured CPU per sale and per refusal.
 * The bottleneck is the tier that needs the most instances.
 */
export interface TierCost {
  usPerSale: number;
  usPerRefusal: number;
}

export interface CapacityRow extends TierCost {
  tier: string;
  /** CPU-seconds per second the tier spends at this rate */
  cores: number;
  instances: number;
}

export function capacityModel(
  costs: Record<string, TierCost>,
  o: { rate: number; refusalShare: number; utilisation: number },
): { rows: CapacityRow[]; bottleneck: string } {
  const sales = o.rate * (1 - o.refusalShare);
  const refusals = o.rate * o.refusalShare;
  const rows = Object.entries(costs).map(([tier, c]) => {
    const cores = (sales * c.usPerSale + refusals * c.usPerRefusal) / 1e6;
    return {
      tier,
      ...c,
      cores: Math.round(cores * 10) / 10,
      instances: Math.ceil(cores / o.utilisation),
    };
  });
  const bottleneck = rows.reduce((a, b) => (b.instances > a.instances ? b : a)).tier;
  return { rows, bottleneck };
}
