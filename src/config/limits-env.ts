/**
 * The variables that bound what one shopper, one client address or one API process may ask:
 * rate limits, bodies, in-flight requests. Part of env.ts's schema.
 */
import { z } from 'zod';
import { rate, rateOrOff } from './rate.js';
import { ms, positiveInt } from './env-types.js';

export const limitsEnv = {
  BODY_LIMIT_BYTES: positiveInt
    .max(1_048_576)
    .default(16_384)
    .describe('largest accepted request body (at most 1 MiB); larger gets 413'),
  HTTP_REQUEST_TIMEOUT_MS: ms
    .min(1_000)
    .max(300_000)
    .default(10_000)
    .describe(
      "a request's headers and body must arrive within this (node's `requestTimeout`, checked about every second by one sweep); past it the answer is `408` problem+json and the connection is closed",
    ),
  MAX_UNREAD_BODIES_PER_ADDRESS: z.coerce
    .number()
    .int()
    .min(0)
    .max(100_000)
    .default(64)
    .describe(
      "request bodies one client address (the socket's peer) may have half-sent at once; past it the address's oldest half-sent body is ended with `408` (the new request is served) (`0`: no bound; behind a proxy that streams bodies unbuffered, raise it)",
    ),
  RATE_LIMIT_USER: rateOrOff
    .default('5/s')
    .describe(
      'requests per shopper on `POST /seckill`, on the sale-token route and on waiting-room joins (`POST /products/:id/queue`; each its own bucket): `<n>/s` or `<n>/m`; `off`: no limit',
    ),
  RATE_LIMIT_USER_BURST: positiveInt
    .max(1_000_000)
    .optional()
    .describe('requests a shopper may send at once'),
  RATE_LIMIT_ORDERS: rate
    .default('20/s')
    .describe(
      'requests per shopper on `GET /orders/:id`, its pay and cancel routes (one bucket, bursts of the rate); an admin reading is not limited',
    ),
  RATE_LIMIT_IP: rateOrOff
    .default('200/s')
    .describe(
      'requests per client address on the same routes (each its own bucket); `off`: no limit',
    ),
  RATE_LIMIT_IP_BURST: positiveInt
    .max(1_000_000)
    .optional()
    .describe('requests one address may send at once'),
  RATE_LIMIT_POLL_IP: rateOrOff
    .default('100/s')
    .describe(
      'waiting-room polls per client address and API process, counted in memory (no Redis command; bursts of the rate); past it `429 rate-limited`; `off`: none',
    ),
  TRUST_PROXY: z
    .string()
    .regex(/^(true|false|\d{1,2}|[\w.:/, -]+)$/, 'must be true, false, a hop count or addresses')
    .default('false')
    .describe(
      'Express `trust proxy`: `true`, a hop count, or proxy addresses / subnets; decides whose `X-Forwarded-For` names the client',
    ),
  MAX_INFLIGHT: z.coerce
    .number()
    .int()
    .min(0)
    .default(2_000)
    .describe(
      'requests one API process works on at once, counted once their body is read; past it `503 overloaded` before any Redis call (`0`: no cap)',
    ),
  ADMIN_GUESS_LIMIT: rate
    .default('10/m')
    .describe(
      'wrong admin tokens (bearer, dashboard login) per client address, bursts of n; past it that address gets `429` for any token ([admin-access.md](admin-access.md))',
    ),
};
