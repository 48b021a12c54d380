/**
 * The variables of order events and their delivery (docs/events.md): the feed's retention, the
 * relay's pace, and how webhooks are sent (timeout, retry schedule, which receivers may be
 * reached). Part of env.ts's schema.
 */
import { z } from 'zod';

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 } as const;

/** "5s,5m,30m" -> [5000, 300000, 1800000]; undefined when a part is not <n><ms|s|m|h>. */
export function parseSchedule(text: string): number[] | undefined {
  const parts = text.split(',').map((p) => /^\s*(\d{1,7})(ms|s|m|h)\s*$/.exec(p));
  if (parts.some((m) => !m)) return undefined;
  return parts.map((m) => Number(m![1]) * UNIT_MS[m![2] as keyof typeof UNIT_MS]);
}

/** Standard Webhooks' suggested schedule: 8 attempts over about 28 hours. */
export const DEFAULT_RETRY_SCHEDULE = '5s,5m,30m,2h,5h,10h,10h';

export const eventsEnv = {
  EVENT_RETENTION_HOURS: z.coerce
    .number()
    .int()
    .min(1)
    .max(24 * 365)
    .default(168)
    .describe(
      'order events are kept this long (the sweep prunes older ones): `GET /admin/events` resumes from a cursor this old ([events.md](events.md#the-feed))',
    ),
  EVENT_RELAY_INTERVAL_MS: z.coerce
    .number()
    .int()
    .min(10)
    .max(60_000)
    .default(100)
    .describe(
      'how often the relay hands new events on to webhook deliveries while there are some (the floor of the delivery lag); idle, its wait doubles up to 1 s',
    ),
  WEBHOOK_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(100)
    .max(60_000)
    .default(10_000)
    .describe('a delivery without a complete answer this long is a failed attempt'),
  WEBHOOK_RETRY_SCHEDULE: z
    .string()
    .refine((s) => {
      const d = parseSchedule(s);
      return d !== undefined && d.length <= 30;
    }, 'must be up to 30 delays <n><ms|s|m|h>, comma-separated, e.g. 5s,5m,30m')
    .default(DEFAULT_RETRY_SCHEDULE)
    .describe(
      "the delays between attempts (each +-20 % jitter; a longer `Retry-After` wins, up to a day); after the last delay's attempt the event is dead-lettered ([events.md](events.md#retries-and-dead-letters))",
    ),
  WEBHOOK_CONCURRENCY: z.coerce
    .number()
    .int()
    .min(1)
    .max(1_000)
    .default(16)
    .describe('deliveries one worker process makes at once (each to a different order)'),
  WEBHOOK_ALLOW_PRIVATE: bool
    .default(false)
    .describe(
      'receivers may be private, loopback or link-local addresses, and plain http there: off in production, a webhook sender being an SSRF door ([events.md](events.md#receiver-urls))',
    ),
  WEBHOOK_HTTP_HOSTS: z
    .string()
    .regex(/^[\w.:\-[\], ]*$/, 'must be host names, comma-separated')
    .default('')
    .describe('public hosts a receiver may be reached at over plain http, comma-separated'),
};

type EventsEnv = { [K in keyof typeof eventsEnv]: z.output<(typeof eventsEnv)[K]> };

export interface EventsConfig {
  retentionHours: number;
  relayIntervalMs: number;
  webhook: {
    timeoutMs: number;
    /** the delay before each retry; attempts = its length + 1 */
    retryScheduleMs: readonly number[];
    concurrency: number;
    allowPrivate: boolean;
    httpHosts: readonly string[];
  };
}

export function eventsConfig(env: EventsEnv): EventsConfig {
  return {
    retentionHours: env.EVENT_RETENTION_HOURS,
    relayIntervalMs: env.EVENT_RELAY_INTERVAL_MS,
    webhook: {
      timeoutMs: env.WEBHOOK_TIMEOUT_MS,
      retryScheduleMs: parseSchedule(env.WEBHOOK_RETRY_SCHEDULE)!,
      concurrency: env.WEBHOOK_CONCURRENCY,
      allowPrivate: env.WEBHOOK_ALLOW_PRIVATE,
      httpHosts: env.WEBHOOK_HTTP_HOSTS.split(',')
        .map((h) => h.trim().toLowerCase())
        .filter(Boolean),
    },
  };
}
