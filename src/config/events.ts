/** The variables of order events (docs/events.md). Part of env.ts's schema. */
import { z } from 'zod';

export const eventsEnv = {
  EVENT_RETENTION_HOURS: z.coerce
    .number()
    .int()
    .min(1)
    .max(24 * 365)
    .default(168)
    .describe('order events are kept this long: GET /admin/events resumes from a cursor this old'),
};

type EventsEnv = { [K in keyof typeof eventsEnv]: z.output<(typeof eventsEnv)[K]> };

export interface EventsConfig {
  retentionHours: number;
}

export function eventsConfig(env: EventsEnv): EventsConfig {
  return {
    retentionHours: env.EVENT_RETENTION_HOURS,
  };
}
