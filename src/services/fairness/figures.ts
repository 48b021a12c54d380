/**
 * A sale's fairness figures from what was recorded (docs/fairness.md): E identities that tried,
 * F of them flagged, U units sold, u_F bought by flagged identities; the fair share
 * mu = U * F / E, the hypergeometric 95 % band of u_F under a fair draw (U draws without
 * replacement from E identities, F flagged), the advantage A = u_F / mu, the share of units bought
 * by the top 1 % of buyers, and the units per linked cluster. Pure: the report recomputes from the
 * same inputs, and so can a reader.
 */
import { quantiles } from './hypergeometric.js';

export interface Tried {
  userId: string;
  /** the address block (IPv4 /24, IPv6 /48) the identity came from */
  block: string;
  /** the device or payment fingerprint the shop passed, if any */
  fingerprint?: string | undefined;
  /** the client address it first came from (the burst rules) */
  address?: string | undefined;
  /** when it was first noted (ms since the epoch) */
  at?: number | undefined;
  /** when its account was made (ms), from the shop's token claim FAIRNESS_ACCOUNT_AGE_CLAIM */
  accountCreatedAt?: number | undefined;
}

export interface Cluster {
  /** what links them: the address block, or the fingerprint the shop passed */
  by: 'address-block' | 'fingerprint';
  key: string;
  identities: number;
  units: number;
}

export interface FairnessFigures {
  identities: number;
  flagged: number;
  units: number;
  flaggedUnits: number;
  /** mu = U * F / E (0 when nobody tried) */
  fairShare: number;
  /** 2.5 % and 97.5 % quantiles of u_F under a fair draw */
  band: [number, number];
  /** A = u_F / mu; null when mu is 0 (no flagged identity, or nothing sold) */
  advantage: number | null;
  /** the band as advantages: [low / mu, high / mu]; null with mu 0 */
  advantageBand: [number, number] | null;
  /** units bought by the top 1 % of buyers (at least one buyer) over U; 0 when nothing sold */
  top1PercentShare: number;
  /** clusters of more than one identity, most units first (at most CLUSTERS_SHOWN) */
  clusters: Cluster[];
}

export const CLUSTERS_SHOWN = 20;

const round = (value: number) => Math.round(value * 1e4) / 1e4;

/**
 * @param tried - each identity that tried once (a buyer missing from it is added: buying is trying)
 * @param units - units bought per identity
 * @param flagged - the identities the rules flagged
 */
export function fairnessFigures(
  tried: Tried[],
  units: Map<string, number>,
  flagged: Set<string>,
): FairnessFigures {
  const who = new Map(tried.map((t) => [t.userId, t]));
  for (const userId of units.keys()) {
    if (!who.has(userId)) who.set(userId, { userId, block: 'unknown' });
  }
  const E = who.size;
  const F = [...who.keys()].filter((u) => flagged.has(u)).length;
  let U = 0;
  let uF = 0;
  for (const [userId, n] of units) {
    U += n;
    if (flagged.has(userId)) uF += n;
  }
  const mu = E === 0 ? 0 : (U * F) / E;
  // a unit is a draw of an identity; more units than identities: the band of the last full draw
  const [low, high] =
    E === 0
      ? [0, 0]
      : quantiles({ population: E, marked: F, draws: Math.min(U, E) }, [0.025, 0.975]);
  const buyers = [...units.values()].filter((n) => n > 0).sort((a, b) => b - a);
  const top = buyers.slice(0, Math.max(1, Math.ceil(buyers.length / 100)));
  return {
    identities: E,
    flagged: F,
    units: U,
    flaggedUnits: uF,
    fairShare: round(mu),
    band: [low!, high!],
    advantage: mu === 0 ? null : round(uF / mu),
    advantageBand: mu === 0 ? null : [round(low! / mu), round(high! / mu)],
    top1PercentShare: U === 0 ? 0 : round(top.reduce((s, n) => s + n, 0) / U),
    clusters: clustersOf([...who.values()], units),
  };
}

function clustersOf(tried: Tried[], units: Map<string, number>): Cluster[] {
  const groups = new Map<string, Cluster>();
  const add = (by: Cluster['by'], key: string, userId: string) => {
    const id = `${by}|${key}`;
    const c = groups.get(id) ?? { by, key, identities: 0, units: 0 };
    c.identities++;
    c.units += units.get(userId) ?? 0;
    groups.set(id, c);
  };
  for (const t of tried) {
    if (t.block !== 'unknown') add('address-block', t.block, t.userId);
    if (t.fingerprint) add('fingerprint', t.fingerprint, t.userId);
  }
  return [...groups.values()]
    .filter((c) => c.identities > 1)
    .sort((a, b) => b.units - a.units || b.identities - a.identities || (a.key < b.key ? -1 : 1))
    .slice(0, CLUSTERS_SHOWN);
}

/** The address block of a client address: IPv4 /24, IPv6 /48 (an IPv4-mapped IPv6 as IPv4). */
export function addressBlock(ip: string): string {
  const v4 = /^(?:::ffff:)?(\d+)\.(\d+)\.(\d+)\.\d+$/i.exec(ip);
  if (v4) return `${v4[1]}.${v4[2]}.${v4[3]}.0/24`;
  if (ip.includes(':')) {
    const [head = '', tail = ''] = ip.split('::');
    const h = head ? head.split(':') : [];
    const t = tail ? tail.split(':') : [];
    const groups = ip.includes('::')
      ? [...h, ...Array(8 - h.length - t.length).fill('0'), ...t]
      : h;
    return `${groups
      .slice(0, 3)
      .map((g) => (parseInt(g || '0', 16) || 0).toString(16))
      .join(':')}::/48`;
  }
  return ip || 'unknown';
}
