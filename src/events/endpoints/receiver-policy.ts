/**
 * Where webhooks may go. A webhook sender makes requests to URLs an admin typed in, from inside
 * the shop's network: an SSRF door to whatever listens there (the cloud's metadata service at
 * 169.254.169.254, a database's HTTP port, an admin panel on localhost). So a receiver must be
 * https, or plain http to a host the admin allowed (WEBHOOK_HTTP_HOSTS); and it must resolve to
 * public addresses only, unless private ones are allowed (WEBHOOK_ALLOW_PRIVATE: a developer's
 * own machine, `npm start`), where plain http is allowed too. The check runs when an endpoint is
 * registered and again on every connection (the address actually connected to, so a name that
 * resolves elsewhere later is caught); redirects are never followed (sender.ts). Names are
 * resolved by receiver-names.ts, off the process's shared thread pool.
 */
import type { LookupAddress } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import { receiverNames, type ReceiverNames, type ResolvedAddress } from './receiver-names.js';

export interface ReceiverRules {
  allowPrivate: boolean;
  /** hosts (lower case, a port optional) reachable over plain http */
  httpHosts: readonly string[];
}

const PRIVATE = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  PRIVATE.addSubnet(net, bits, 'ipv4');
}
for (const [net, bits] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
  ['2001:db8::', 32],
] as const) {
  PRIVATE.addSubnet(net, bits, 'ipv6');
}

/**
 * IPv6 forms that carry an IPv4 address (or a site's own network) other than the two unwrapped
 * below: refused whole rather than unwrapped, since a receiver has no business at any of them.
 * IPv4-compatible ::a.b.c.d (deprecated), IPv4-translated ::ffff:0:a.b.c.d (SIIT), local-use
 * NAT64 64:ff9b:1::/48 (a network's own translator), 6to4 2002::/16, Teredo 2001::/32 (its
 * client address obfuscated in the last 32 bits), and site-local fec0::/10 (deprecated).
 */
const TRANSITION = new BlockList();
for (const [net, bits] of [
  ['::', 96],
  ['::ffff:0:0:0', 96],
  ['64:ff9b:1::', 48],
  ['2002::', 16],
  ['2001::', 32],
  ['fec0::', 10],
] as const) {
  TRANSITION.addSubnet(net, bits, 'ipv6');
}

/** The eight 16-bit groups of an IPv6 address in any spelling (`::`, a dotted IPv4 tail). */
function groupsOf(address: string): number[] {
  let text = address.toLowerCase();
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? text.split('::') : [text, undefined];
  const parse = (part: string | undefined) =>
    part ? part.split(':').map((g) => parseInt(g, 16)) : [];
  const front = parse(head);
  const back = parse(tail);
  return tail === undefined
    ? front
    : [...front, ...Array<number>(8 - front.length - back.length).fill(0), ...back];
}

/** The IPv4 address an IPv6 one carries where it stands for it: mapped ::ffff:a.b.c.d, NAT64 64:ff9b::a.b.c.d. */
function embeddedV4(address: string): string | undefined {
  const g = groupsOf(address);
  const mapped = g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff;
  const nat64 = g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0);
  if (!mapped && !nat64) return undefined;
  const [hi, lo] = [g[6]!, g[7]!];
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/** Why a receiver may not be at `address`, in words; undefined for a public address. */
export function addressRefusal(address: string): string | undefined {
  const family = isIP(address);
  if (family === 6) {
    const v4 = embeddedV4(address);
    if (v4) return PRIVATE.check(v4, 'ipv4') ? `a private address (${v4} inside)` : undefined;
    if (PRIVATE.check(address, 'ipv6')) return 'a private, loopback or link-local address';
    if (TRANSITION.check(address, 'ipv6')) {
      return 'an IPv6 transition or site-local address (IPv4-compatible, translated, local NAT64, 6to4, Teredo): refused whatever it carries, as private';
    }
    return undefined;
  }
  return PRIVATE.check(address, 'ipv4') ? 'a private, loopback or link-local address' : undefined;
}

/** Private, loopback, link-local, reserved, multicast or a transition form: not the public internet. */
export function isPrivateAddress(address: string): boolean {
  return addressRefusal(address) !== undefined;
}

export class ReceiverRefused extends Error {}

/** The URL's host as sent (brackets off an IPv6 literal), lower case. */
const hostOf = (url: URL) => url.hostname.replace(/^\[|\]$/g, '').toLowerCase();

/**
 * Checks a receiver URL's form and, when its host is an address, that address.
 * @throws ReceiverRefused saying why, in words for the admin
 */
export function checkReceiverUrl(text: string, rules: ReceiverRules): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ReceiverRefused('is not a URL (e.g. https://warehouse.example/hooks/seckill)');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new ReceiverRefused('must be https:// (or http:// to a host WEBHOOK_HTTP_HOSTS allows)');
  }
  if (url.username || url.password) {
    throw new ReceiverRefused('must not carry credentials: each delivery is signed instead');
  }
  if (url.hash) throw new ReceiverRefused('must not have a #fragment');
  const host = hostOf(url);
  const literal = isIP(host) !== 0;
  const why = literal && !rules.allowPrivate ? addressRefusal(host) : undefined;
  if (why) {
    throw new ReceiverRefused(
      `${host} is ${why}: receivers must be public unless WEBHOOK_ALLOW_PRIVATE=true`,
    );
  }
  if (url.protocol === 'http:' && !httpAllowed(url, rules, literal && isPrivateAddress(host))) {
    throw new ReceiverRefused(
      `plain http to ${url.host} is not allowed: use https, or list the host in WEBHOOK_HTTP_HOSTS`,
    );
  }
  return url;
}

function httpAllowed(url: URL, rules: ReceiverRules, privateLiteral: boolean): boolean {
  const host = hostOf(url);
  if (rules.httpHosts.includes(host) || rules.httpHosts.includes(url.host.toLowerCase())) {
    return true;
  }
  // a private network is the admin's own: there, http is allowed with private addresses
  return rules.allowPrivate && (privateLiteral || host === 'localhost' || !host.includes('.'));
}

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/** The refusal of a name one of whose addresses is private, or undefined. */
function refusalOf(hostname: string, list: readonly ResolvedAddress[], rules: ReceiverRules) {
  if (rules.allowPrivate) return undefined;
  for (const a of list) {
    const why = addressRefusal(a.address);
    if (why) return `${hostname} resolves to ${a.address}, ${why}`;
  }
  return undefined;
}

/**
 * A `lookup` for http.request: the name resolved by `names` (off the shared thread pool), every
 * address checked, and only those handed to the socket, so it connects to an address that was
 * checked (a name resolving elsewhere a moment later changes nothing).
 */
export function guardedLookup(rules: ReceiverRules, names: ReceiverNames = receiverNames()) {
  return (hostname: string, options: object, callback: LookupCallback): void => {
    const { all, family } = options as { all?: boolean; family?: number };
    names.resolve(hostname).then(
      (resolved) => {
        const refused = refusalOf(hostname, resolved, rules);
        if (refused) {
          const err = new ReceiverRefused(
            `${refused} (WEBHOOK_ALLOW_PRIVATE is off)`,
          ) as NodeJS.ErrnoException;
          err.code = 'ERECEIVERREFUSED';
          return callback(err, []);
        }
        const list = resolved.filter((a) => !family || a.family === family);
        if (list.length === 0) {
          const err = new Error(`${hostname} has no IPv${family} address`) as NodeJS.ErrnoException;
          err.code = 'ENOTFOUND';
          return callback(err, []);
        }
        if (all) return callback(null, list);
        callback(null, list[0]!.address, list[0]!.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, []),
    );
  };
}

/** The address check for a URL whose host is an address (no lookup runs for those). */
export function checkLiteralHost(url: URL, rules: ReceiverRules): void {
  const host = hostOf(url);
  const why = isIP(host) !== 0 && !rules.allowPrivate ? addressRefusal(host) : undefined;
  if (why) throw new ReceiverRefused(`${host} is ${why} (WEBHOOK_ALLOW_PRIVATE is off)`);
}

/**
 * At registration: a name that resolves (now) to a private address is refused unless allowed.
 * A name that does not resolve is let through: deliveries check every connection anyway.
 */
export async function checkReceiverHost(
  url: URL,
  rules: ReceiverRules,
  names: ReceiverNames = receiverNames(),
): Promise<void> {
  checkLiteralHost(url, rules);
  const host = hostOf(url);
  if (isIP(host) !== 0 || rules.allowPrivate) return;
  const addresses = await names.resolve(host).catch(() => []);
  const refused = refusalOf(host, addresses, rules);
  if (refused) {
    throw new ReceiverRefused(
      `${refused}: receivers must be public unless WEBHOOK_ALLOW_PRIVATE=true`,
    );
  }
}
