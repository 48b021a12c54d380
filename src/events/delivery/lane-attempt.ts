/**
 * One attempt at a lane (one endpoint, one subject: an order, or a product event's subject): its
 * events of the endpoint's types past what the receiver acknowledged, one at a time, in version
 * (sequence) order, each signed; the next is sent only once the one before it was acknowledged
 * (a 2xx). The lane then moves on in one compare-and-set from the version it read (a replay that
 * moved it meanwhile wins). A failure stops the lane there and is recorded with when the lane is
 * due again (the schedule's delay, a longer Retry-After winning): the relay gives the lane a job
 * of its own then, so a retry never overtakes; after the schedule's last attempt the lane is
 * dead-lettered from that event on. A 410 disables the endpoint. How it ended is a value
 * (LaneOutcome), never a throw. An event's id is its `webhook-id` on every delivery.
 * batch-delivery.ts and lane-delivery.ts run it for many lanes, or for one.
 */
import { cloudEvent, type FeedEvent } from '../feed/index.js';
import { signDelivery, type Endpoint } from '../endpoints/index.js';
import type { Failure, Lane, LaneRef } from '../lanes/index.js';
import type { Slot } from './endpoint-slots.js';
import { MAX_RETRY_AFTER_MS, retryDelay } from './retry-schedule.js';
import type { SendOutcome } from './sender.js';

export interface DeliveryMetrics {
  delivered(endpointId: string, lagSeconds: number): void;
  failedAttempt(endpointId: string, reason: string): void;
  deadLettered(endpointId: string): void;
  disabled(endpointId: string): void;
}

export interface LaneRecords {
  ack(ref: LaneRef, from: number, version: number, nextPendingSince: Date | null): Promise<boolean>;
  failed(ref: LaneRef, failure: Failure): Promise<void>;
  markDead(ref: LaneRef, version: number, attempts: number, error: string): Promise<void>;
}

export interface DeliveryCore {
  endpoints: { setStatus(id: string, status: 'disabled', reason: string): Promise<unknown> };
  lanes: LaneRecords;
  send(url: string, headers: Record<string, string>, body: string): Promise<SendOutcome>;
  /** delays between attempts (WEBHOOK_RETRY_SCHEDULE) */
  scheduleMs: readonly number[];
  metrics?: DeliveryMetrics | undefined;
  now?: () => number;
}

/** The secrets that sign now: the current one, and the previous one during its grace. */
function secretsOf(endpoint: Endpoint, now: number): string[] {
  const until = endpoint.previousSecretUntil?.getTime() ?? 0;
  return endpoint.previousSecret && until > now
    ? [endpoint.secret, endpoint.previousSecret]
    : [endpoint.secret];
}

/** A reason as a metric label: the status class, a timeout, a refusal, or a network error. */
export function reasonLabel(outcome: Extract<SendOutcome, { code: 'failed' }>): string {
  if (outcome.status) return `${Math.floor(outcome.status / 100)}xx`;
  if (outcome.reason.startsWith('no answer')) return 'timeout';
  if (outcome.reason.startsWith('refused')) return 'refused';
  return 'network';
}

/** How delivering a lane's due events ended. */
export type LaneOutcome =
  /** every due event acknowledged (`moved`: a replay moved the lane meanwhile: read it again) */
  | { code: 'delivered'; moved: boolean }
  /** the receiver answered 410: the endpoint is disabled */
  | { code: 'gone' }
  /** an attempt failed: recorded, with the lane due again in `delayMs` */
  | { code: 'retry'; delayMs: number; why: string }
  /** the schedule's last attempt failed: the lane is dead-lettered */
  | { code: 'dead'; why: string }
  /** not attempted: its endpoint is quiet and busy (endpoint-slots.ts); due again in `delayMs` */
  | { code: 'held'; delayMs: number };

/**
 * Sends `due` (the lane's events past `lane.ackedVersion`, in sequence order) until one fails,
 * then records how far it got. @param slot - the lane's slot: told when each request starts and
 * whether it was answered
 */
export async function deliverDue(
  deps: DeliveryCore,
  endpoint: Endpoint,
  lane: Pick<Lane, 'endpointId' | 'subject' | 'ackedVersion' | 'attempts' | 'scheduledAt'>,
  due: readonly FeedEvent[],
  slot?: Slot,
): Promise<LaneOutcome> {
  const now = deps.now ?? Date.now;
  const ref = { endpointId: lane.endpointId, subject: lane.subject };
  let sent = 0;
  let stopped:
    { event: FeedEvent; outcome: Exclude<SendOutcome, { code: 'delivered' }> } | undefined;
  for (const event of due) {
    const body = JSON.stringify(cloudEvent(event));
    const headers = signDelivery(event.id, body, secretsOf(endpoint, now()), new Date(now()));
    slot?.attempt();
    const outcome = await deps.send(endpoint.url, headers, body);
    slot?.ended(outcome.code !== 'failed' || outcome.status !== undefined);
    if (outcome.code !== 'delivered') {
      stopped = { event, outcome };
      break;
    }
    deps.metrics?.delivered(ref.endpointId, (now() - event.occurredAt.getTime()) / 1_000);
    sent++;
  }
  const moved =
    sent > 0 &&
    !(await deps.lanes.ack(
      ref,
      lane.ackedVersion,
      due[sent - 1]!.sequence,
      due[sent]?.occurredAt ?? null,
    ));
  if (!stopped) return { code: 'delivered', moved };
  const { event, outcome } = stopped;
  if (outcome.code === 'gone') {
    await deps.endpoints.setStatus(ref.endpointId, 'disabled', 'the receiver answered 410 Gone');
    deps.metrics?.disabled(ref.endpointId);
    return { code: 'gone' };
  }
  const reason = reasonLabel(outcome);
  deps.metrics?.failedAttempt(ref.endpointId, reason);
  const at = now();
  const notBefore =
    outcome.retryAfterMs === undefined
      ? null
      : new Date(at + Math.min(outcome.retryAfterMs, MAX_RETRY_AFTER_MS));
  const endpointDown =
    reason === 'timeout' || reason === 'network' || [502, 503, 504].includes(outcome.status ?? 0);
  const why = `${event.id} (${event.type}): ${outcome.reason}`;
  // brought forward (the endpoint answered again, a probe, "retry now") and failed: not counted,
  // the lane goes back where its schedule had it
  const scheduled = sent === 0 ? lane.scheduledAt : null;
  if (scheduled && scheduled.getTime() > at) {
    const nextAt = new Date(Math.max(scheduled.getTime(), notBefore?.getTime() ?? 0));
    await deps.lanes.failed(ref, {
      attempts: lane.attempts,
      error: outcome.reason,
      nextAt,
      scheduledAt: scheduled,
      notBefore,
      endpointDown,
    });
    return {
      code: 'retry',
      delayMs: nextAt.getTime() - at,
      why: `an early attempt failed: ${why}`,
    };
  }
  // the lane's failures count for the event now due: one acknowledged before it resets them
  const attempts = (sent > 0 ? 0 : lane.attempts) + 1;
  const delay = retryDelay(deps.scheduleMs, attempts, outcome.retryAfterMs);
  if (delay === undefined) {
    await deps.lanes.markDead(ref, event.sequence, attempts, outcome.reason);
    deps.metrics?.deadLettered(ref.endpointId);
    return { code: 'dead', why: `dead-lettered after ${attempts} attempts: ${why}` };
  }
  const nextAt = new Date(at + delay);
  await deps.lanes.failed(ref, {
    attempts,
    error: outcome.reason,
    nextAt,
    scheduledAt: nextAt,
    notBefore,
    endpointDown,
  });
  return { code: 'retry', delayMs: delay, why: `attempt ${attempts} failed: ${why}` };
}
