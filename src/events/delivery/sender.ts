/**
 * One webhook delivery: an HTTP POST of the event's JSON, signed, to the endpoint's URL, with a
 * deadline on the whole exchange (connect, send, answer). Only a 2xx acknowledges; a redirect is
 * not followed (it is a failed attempt: the admin fixes the URL); 410 says the receiver is gone
 * for good. The connection goes only to addresses the receiver rules allow (receiver-policy.ts).
 */
import http from 'node:http';
import https from 'node:https';
import { packageVersion } from '../../version.js';
import {
  checkLiteralHost,
  guardedLookup,
  ReceiverRefused,
  type ReceiverNames,
  type ReceiverRules,
} from '../endpoints/index.js';

export type SendOutcome =
  | { code: 'delivered'; status: number }
  /** the receiver is gone for good: the endpoint is disabled */
  | { code: 'gone'; status: 410 }
  /** anything else: retried on the schedule (a longer Retry-After wins) */
  | {
      code: 'failed';
      /** the answer's status, or what happened instead */
      reason: string;
      status?: number;
      /** the receiver's Retry-After, in ms */
      retryAfterMs?: number;
    };

/** Retry-After as seconds or an HTTP date; undefined when absent or unreadable. */
export function retryAfterMs(value: string | undefined, now = Date.now()): number | undefined {
  if (!value) return undefined;
  if (/^\d{1,9}$/.test(value.trim())) return Number(value.trim()) * 1_000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** The most of an answer's body read (then dropped): receivers are not asked for one. */
const MAX_ANSWER_BYTES = 64 * 1024;

export interface Sender {
  send(url: string, headers: Record<string, string>, body: string): Promise<SendOutcome>;
  close(): void;
}

/** @param names - resolves receivers' names (default: the process's, off the shared thread pool) */
export function createSender(
  rules: ReceiverRules,
  timeoutMs: number,
  names?: ReceiverNames,
): Sender {
  const lookup = guardedLookup(rules, names);
  // keep-alive: an endpoint takes many deliveries; maxSockets bounds what one process opens
  const agents = {
    'http:': new http.Agent({ keepAlive: true, maxSockets: 64 }),
    'https:': new https.Agent({ keepAlive: true, maxSockets: 64 }),
  };
  const userAgent = `seckill-webhooks/${packageVersion()}`;

  const send = (url: string, headers: Record<string, string>, body: string) =>
    new Promise<SendOutcome>((resolve) => {
      const target = new URL(url);
      try {
        checkLiteralHost(target, rules);
      } catch (err) {
        return resolve({ code: 'failed', reason: `refused: ${(err as Error).message}` });
      }
      const transport = target.protocol === 'https:' ? https : http;
      const req = transport.request(
        target,
        {
          method: 'POST',
          agent: agents[target.protocol as 'http:' | 'https:'],
          lookup: lookup as never,
          headers: {
            ...headers,
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
            'user-agent': userAgent,
          },
          signal: AbortSignal.timeout(timeoutMs),
        },
        (res) => {
          let read = 0;
          res.on('data', (chunk: Buffer) => {
            read += chunk.length;
            if (read > MAX_ANSWER_BYTES) res.destroy();
          });
          const done = () => {
            const status = res.statusCode ?? 0;
            if (status >= 200 && status < 300) return resolve({ code: 'delivered', status });
            if (status === 410) return resolve({ code: 'gone', status: 410 });
            const wait = retryAfterMs(res.headers['retry-after']);
            resolve({
              code: 'failed',
              reason: `answered ${status}`,
              status,
              ...(wait !== undefined && { retryAfterMs: wait }),
            });
          };
          res.on('end', done);
          // a 2xx whose body was cut (or too long) still acknowledged the event
          res.on('close', done);
          res.on('error', () => undefined);
        },
      );
      req.on('error', (err: NodeJS.ErrnoException) => {
        const reason =
          err.name === 'TimeoutError' || err.name === 'AbortError'
            ? `no answer within ${timeoutMs} ms`
            : err instanceof ReceiverRefused || err.code === 'ERECEIVERREFUSED'
              ? `refused: ${err.message}`
              : `${err.code ?? 'error'}: ${err.message}`;
        resolve({ code: 'failed', reason });
      });
      req.end(body);
    });

  return {
    send,
    close() {
      agents['http:'].destroy();
      agents['https:'].destroy();
    },
  };
}
