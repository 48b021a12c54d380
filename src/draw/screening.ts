/**
 * The screening before the freeze: the rules a shop may set, applied to the entries at the close,
 * and their SHA-256 (published with the freeze, so a shop that screens cannot say afterwards it
 * screened otherwise). The rules that exist:
 *
 * - `one entry per identity`: the store holds one entry per shopper identity (a second entry
 *   answers the first), so it removes nothing at the freeze; listed so the count says so.
 * - `deny list`: identities the shop refuses (known bots, banned accounts).
 * - `address block`: at most `maxEntriesPerAddressBlock` entries from one client address block
 *   (an IPv4 /24, an IPv6 /64), the first ones entered kept.
 *
 * What the shop can still do is exactly this: screen before the freeze. It cannot add, drop or
 * reorder an entry after it (docs/draw.md).
 */
import { createHash } from 'node:crypto';
import { isIPv4, isIPv6 } from 'node:net';

export interface DrawRules {
  /** entries kept per address block (IPv4 /24, IPv6 /64); null: no bound */
  maxEntriesPerAddressBlock: number | null;
  /** shopper identities refused */
  denyList: string[];
}

export const NO_RULES: DrawRules = { maxEntriesPerAddressBlock: null, denyList: [] };

export type RuleName = 'deny-list' | 'address-block';

/** An entry as the store holds it at the close. */
export interface HeldEntry {
  entryId: string;
  userId: string;
  /** the client address block it came from ('' when unknown) */
  block: string;
  /** the order it was entered in (1 first) */
  seq: number;
}

/** The rules as the hashed document: canonical JSON (keys in order, the deny list sorted). */
export function rulesDocument(rules: DrawRules): string {
  return JSON.stringify({
    oneEntryPerIdentity: true,
    denyList: [...new Set(rules.denyList)].sort(),
    maxEntriesPerAddressBlock: rules.maxEntriesPerAddressBlock,
  });
}

export const rulesHash = (rules: DrawRules): string =>
  createHash('sha256').update(rulesDocument(rules), 'utf8').digest('hex');

/** The entries the rules keep, and those they remove with the rule that did. */
export function screen(
  entries: readonly HeldEntry[],
  rules: DrawRules,
): { eligible: HeldEntry[]; removed: Array<HeldEntry & { rule: RuleName }> } {
  const denied = new Set(rules.denyList);
  const removed: Array<HeldEntry & { rule: RuleName }> = [];
  const kept: HeldEntry[] = [];
  for (const e of entries) {
    if (denied.has(e.userId)) removed.push({ ...e, rule: 'deny-list' });
    else kept.push(e);
  }
  const bound = rules.maxEntriesPerAddressBlock;
  if (bound === null) return { eligible: kept, removed };
  const eligible: HeldEntry[] = [];
  const perBlock = new Map<string, number>();
  for (const e of [...kept].sort((a, b) => a.seq - b.seq)) {
    const n = (perBlock.get(e.block) ?? 0) + 1;
    perBlock.set(e.block, n);
    if (e.block !== '' && n > bound) removed.push({ ...e, rule: 'address-block' });
    else eligible.push(e);
  }
  return { eligible, removed };
}

/** A client address's block: `a.b.c.0/24` for IPv4, the first four groups `/64` for IPv6. */
export function addressBlock(ip: string): string {
  const v4 = ip.startsWith('::ffff:') && isIPv4(ip.slice(7)) ? ip.slice(7) : ip;
  if (isIPv4(v4)) return `${v4.split('.').slice(0, 3).join('.')}.0/24`;
  if (!isIPv6(ip)) return '';
  const [head = '', tail = ''] = ip.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = ip.includes('::')
    ? [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right]
    : left;
  return `${groups
    .slice(0, 4)
    .map((g) => parseInt(g, 16).toString(16))
    .join(':')}::/64`;
}
