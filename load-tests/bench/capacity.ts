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

/** A row of the HTTP bench's results table (http.ts): its scenario and figures by column. */
export type ResultRow = Record<string, string | number>;

/**
 * A tier's CPU µs per accepted sale in a row: its µs per answer times answers per sale; null when
 * the row sold nothing or has no figure for the tier.
 */
export function perSaleOf(row: ResultRow | undefined, tier: string): number | null {
  const accepted = Number(row?.['accepted/s'] ?? 0);
  if (!row || !accepted) return null;
  const perReq = Number(row[`${tier} us/req`]);
  return Number.isFinite(perReq) ? Math.round((perReq * Number(row['req/s'])) / accepted) : null;
}

const CROWD = { rate: 1_000_000, refusalShare: 0.99, utilisation: 0.7 };
/** the production shape with no refusals: a sale that does not sell out within the window */
const SALES = { rate: 100_000, refusalShare: 0, utilisation: 0.7 };
const TIERS = ['API', 'worker', 'Redis', 'PG'];
/** the rows the crowd model reads: a sale's costs, and a refusal's */
export const SALE_SHAPE = 'lockfree N=16';
export const REFUSAL_SHAPE = 'after sold out';

type Model = ReturnType<typeof capacityModel> & typeof CROWD;

export interface RunCapacity {
  /** 1M requests/s, 99 % refusals, costs of lockfree N=16 and after sold out; null: not run */
  crowd: Model | null;
  /** the production shape: the same crowd, and 100k accepted sales/s; null: not run */
  production: { crowd: Model | null; sales: Model } | null;
}

/**
 * The capacity models of a run, from its rows by scenario. A model whose rows did not run
 * (`--only`) is null rather than a table of zeros.
 */
export function runCapacity(rows: ReadonlyMap<string, ResultRow>): RunCapacity {
  const refusal = rows.get(REFUSAL_SHAPE);
  const costs = (shape: string) =>
    Object.fromEntries(
      TIERS.map((t) => [
        t,
        {
          usPerSale: perSaleOf(rows.get(shape), t) ?? 0,
          usPerRefusal: Number(refusal?.[`${t} us/req`] ?? 0),
        },
      ]),
    );
  const model = (shape: string, o: typeof CROWD): Model => ({
    ...o,
    ...capacityModel(costs(shape), o),
  });
  const production = rows.has('production');
  return {
    crowd: rows.has(SALE_SHAPE) && refusal ? model(SALE_SHAPE, CROWD) : null,
    production: production
      ? { crowd: refusal ? model('production', CROWD) : null, sales: model('production', SALES) }
      : null,
  };
}

/** The capacity part of the bench's text: a table per model, "not run" for a model left out. */
export function capacityText(c: RunCapacity, table: (rows: ResultRow[]) => string): string[] {
  const block = (title: string, m: Model | null, needs: string) =>
    m
      ? [`${title}: bottleneck ${m.bottleneck}`, table(m.rows.map((r) => ({ ...r })))]
      : [`${title}: not run (needs ${needs})`];
  return [
    ...block(
      'capacity for 1 000 000 requests/s, 99 % refusals (one core per instance, 70 % busy)',
      c.crowd,
      `"${SALE_SHAPE}" and "${REFUSAL_SHAPE}"`,
    ),
    ...(c.production
      ? [
          '',
          ...block(
            'the production shape, same crowd',
            c.production.crowd,
            `"production" and "${REFUSAL_SHAPE}"`,
          ),
          '',
          ...block(
            'the production shape, 100 000 accepted sales/s',
            c.production.sales,
            '"production"',
          ),
        ]
      : []),
  ];
}
