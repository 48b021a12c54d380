/**
 * The hypergeometric distribution: `draws` taken without replacement from `population` items of
 * which `marked` are marked; the count of marked items drawn. A fair draw of a sale's units among
 * the identities that tried is this (docs/fairness.md), so its quantiles are the band a fair sale
 * lands in. Computed in log space (populations of 10^6 overflow factorials).
 */

/** ln Gamma(x) for x > 0 (Lanczos, g = 7: about 9 significant digits, far finer than a band of whole units needs). */
export function lnGamma(value: number): number {
  const x = value;
  if (x < 0.5) return Math.log(Math.PI / Math.sin(Math.PI * x)) - lnGamma(1 - x);
  const c = [
    0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
    -176.61503916999185, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6,
    1.5056327351493116e-7,
  ];
  const z = x - 1;
  let a = c[0]!;
  const t = z + 7.5;
  for (let i = 1; i < 9; i++) a += c[i]! / (z + i);
  return 0.5 * Math.log(2 * Math.PI) + (z + 0.5) * Math.log(t) - t + Math.log(a);
}

/** ln C(n, k) */
const lnChoose = (total: number, chosen: number) =>
  lnGamma(total + 1) - lnGamma(chosen + 1) - lnGamma(total - chosen + 1);

export interface Hypergeometric {
  population: number;
  marked: number;
  draws: number;
}

/** The smallest and largest counts a draw can give. */
export function support(dist: Hypergeometric): [number, number] {
  const h = dist;
  return [Math.max(0, h.draws - (h.population - h.marked)), Math.min(h.marked, h.draws)];
}

/** P(X = k). */
export function pmf(dist: Hypergeometric, count: number): number {
  const [h, k] = [dist, count];
  const [lo, hi] = support(h);
  if (k < lo || k > hi) return 0;
  const { population: n, marked: m, draws: d } = h;
  return Math.exp(lnChoose(m, k) + lnChoose(n - m, d - k) - lnChoose(n, d));
}

/**
 * The smallest k with P(X <= k) >= p, for each p (ascending): one pass over the support.
 * @throws when the draws exceed the population (no such draw)
 */
export function quantiles(dist: Hypergeometric, ps: number[]): number[] {
  const h = dist;
  if (h.draws > h.population || h.marked > h.population || h.draws < 0 || h.marked < 0) {
    throw new RangeError(`no hypergeometric draw of ${JSON.stringify(h)}`);
  }
  const [lo, hi] = support(h);
  const out: number[] = [];
  let cdf = 0;
  let i = 0;
  for (let k = lo; k <= hi && i < ps.length; k++) {
    cdf += pmf(h, k);
    // a rounding shortfall at the top must not leave a quantile unset
    while (i < ps.length && (cdf >= ps[i]! - 1e-12 || k === hi)) out[i++] = k;
  }
  while (i < ps.length) out[i++] = hi;
  return out;
}
