/**
 * URLs in the environment: a URL of given schemes, said in words when it is not one, and whether
 * a plain http URL leaves this machine.
 */
import { isIPv4 } from 'node:net';
import { z } from 'zod';

/** The port of a URL that did not parse, when that is what is wrong with it. */
function badPort(text: string): string | undefined {
  const host = text.split('://')[1]?.split(/[/?#]/)[0]?.split('@').pop() ?? '';
  const port = /^(?:\[[^\]]*\]|[^:]*):(.*)$/.exec(host)?.[1];
  return port !== undefined && !/^\d{1,5}$/.test(port) ? port : undefined;
}

/** A URL of one of `protocols`; a problem says what is wrong in words, never throws. */
export const url = (protocols: string[], example: string) =>
  z.string().superRefine((text, ctx) => {
    let parsed: URL;
    try {
      parsed = new URL(text);
    } catch {
      const port = badPort(text);
      ctx.addIssue({
        code: 'custom',
        message:
          port !== undefined
            ? `port ${JSON.stringify(port)} is not a number from 1 to 65535 (e.g. ${example})`
            : `is not a URL (e.g. ${example})`,
      });
      return;
    }
    if (!protocols.includes(parsed.protocol)) {
      ctx.addIssue({
        code: 'custom',
        message: `must start with ${protocols.map((p) => `${p}//`).join(' or ')}`,
      });
    }
  });

/** An http:// URL to a host that is not this machine's loopback (false for what does not parse). */
export function plainHttpAcrossNetwork(text: string): boolean {
  if (!URL.canParse(text)) return false;
  const { protocol, hostname } = new URL(text);
  if (protocol !== 'http:') return false;
  const host = hostname.replace(/^\[|\]$/g, '');
  const loopback =
    host === 'localhost' ||
    host.endsWith('.localhost') ||
    host === '::1' ||
    (isIPv4(host) && host.startsWith('127.'));
  return !loopback;
}
