/**
 * One lane's delivery (a BullMQ job per endpoint and order): the order's events of the
 * endpoint's types past what the receiver acknowledged, one at a time, in version order, each
 * signed. A 2xx moves the lane on; a failure ends the attempt (BullMQ tries again after the
 * schedule's delay, a longer Retry-After winning), so a retry never overtakes: later events wait
 * behind it. After the schedule's last attempt the lane is dead-lettered from that event on.
 * A 410 disables the endpoint. The event's id is its `webhook-id` on every delivery.
 */
import { cloudEvent, type OrderEvent } from './cloud-event.js';
import type { Endpoint } from './endpoints-repository.js';
import type { Lane, LaneRef } from './lanes-repository.js';
import { retryDelay } from './retry-schedule.js';
import type { SendOutcome } from './sender.js';
import { signDelivery } from './signing.js';

export interface DeliveryMetrics {
  delivered(endpointId: string, lagSeconds: number): void;
  failedAttempt(endpointId: string, reason: string): void;
  deadLettered(endpointId: string): void;
  disabled(endpointId: string): void;
}

export interface DeliveryDeps {
  endpoints: {
    get(id: string): Promise<Endpoint | undefined>;
    setStatus(id: string, status: 'disabled', reason: string): Promise<unknown>;
  };
  lanes: {
    get(ref: LaneRef): Promise<Lane | undefined>;
    ack(
      ref: LaneRef,
      from: number,
      version: number,
      nextPendingSince: Date | null,
    ): Promise<boolean>;
    failed(ref: LaneRef, attempts: number, error: string, nextAt: Date): Promise<void>;
    markDead(ref: LaneRef, version: number, attempts: number, error: string): Promise<void>;
    catchUp(ref: LaneRef, from: number): Promise<void>;
  };
  events: { orderEventsAfter(orderId: string, version: number): Promise<OrderEvent[]> };
  send(url: string, headers: Record<string, string>, body: string): Promise<SendOutcome>;
  /** delays between attempts (WEBHOOK_RETRY_SCHEDULE) */
  scheduleMs: readonly number[];
  metrics?: DeliveryMetrics | undefined;
  now?: () => number;
}

/** A failed attempt: BullMQ waits `delayMs`, then runs the lane again. */
export class DeliveryFailed extends Error {
  constructor(
    message: string,
    readonly delayMs: number,
  ) {
    super(message);
    this.name = 'DeliveryFailed';
  }
}

/** The last attempt failed: the lane is dead-lettered (BullMQ is not to retry it). */
export class DeadLettered extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DeadLettered';
  }
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

export type LaneResult = 'delivered' | 'disabled' | 'dead' | 'gone' | 'nothing';

/**
 * Delivers what is due on the lane. @returns how it ended
 * @throws DeliveryFailed (retry after its delay) or DeadLettered (no retry)
 */
export async function deliverLane(deps: DeliveryDeps, ref: LaneRef): Promise<LaneResult> {
  const now = deps.now ?? Date.now;
  const endpoint = await deps.endpoints.get(ref.endpointId);
  if (!endpoint || endpoint.status !== 'active') return 'disabled';
  let lane = await deps.lanes.get(ref);
  if (!lane) return 'nothing';
  let sent = false;
  for (;;) {
    if (lane.deadVersion !== null) return 'dead';
    const due: OrderEvent[] = (
      await deps.events.orderEventsAfter(ref.orderId, lane.ackedVersion)
    ).filter((e) => endpoint.types.includes(e.type));
    if (due.length === 0) {
      if (lane.ackedVersion < lane.wantedVersion) await deps.lanes.catchUp(ref, lane.ackedVersion);
      return sent ? 'delivered' : 'nothing';
    }
    let moved = false;
    for (const [i, event] of due.entries()) {
      const body = JSON.stringify(cloudEvent(event));
      const headers = signDelivery(event.id, body, secretsOf(endpoint, now()), new Date(now()));
      const outcome = await deps.send(endpoint.url, headers, body);
      if (outcome.code === 'delivered') {
        deps.metrics?.delivered(ref.endpointId, (now() - event.occurredAt.getTime()) / 1_000);
        const next = due[i + 1]?.occurredAt ?? null;
        if (!(await deps.lanes.ack(ref, lane.ackedVersion, event.version, next))) {
          moved = true; // a replay moved the lane: read it again
          break;
        }
        lane = { ...lane, ackedVersion: event.version, attempts: 0 };
        sent = true;
        continue;
      }
      if (outcome.code === 'gone') {
        await deps.endpoints.setStatus(
          ref.endpointId,
          'disabled',
          'the receiver answered 410 Gone',
        );
        deps.metrics?.disabled(ref.endpointId);
        return 'gone';
      }
      deps.metrics?.failedAttempt(ref.endpointId, reasonLabel(outcome));
      const attempts = lane.attempts + 1;
      const delay = retryDelay(deps.scheduleMs, attempts, outcome.retryAfterMs);
      const why = `${event.id} (${event.type}): ${outcome.reason}`;
      if (delay === undefined) {
        await deps.lanes.markDead(ref, event.version, attempts, outcome.reason);
        deps.metrics?.deadLettered(ref.endpointId);
        throw new DeadLettered(`dead-lettered after ${attempts} attempts: ${why}`);
      }
      await deps.lanes.failed(ref, attempts, outcome.reason, new Date(now() + delay));
      throw new DeliveryFailed(`attempt ${attempts} failed: ${why}`, delay);
    }
    if (moved) {
      const fresh = await deps.lanes.get(ref);
      if (!fresh) return 'nothing';
      lane = fresh;
    }
  }
}
