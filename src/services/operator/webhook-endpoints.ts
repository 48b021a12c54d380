/**
 * The admin's webhook endpoints (docs/events.md#webhooks): register a receiver for some event
 * types (its `whsec_` secret is in that answer and a rotation's, never again), list them with
 * their backlog, disable and enable, rotate the secret (the old one keeps signing for a day),
 * read the dead letters, replay everything after a cursor, and retry now what waits. Every
 * change is recorded in the audit log before it runs (audit-log.ts), refusals too; a secret
 * never is.
 */
import { randomBytes } from 'node:crypto';
import { QuietError } from '../../errors.js';
import {
  checkReceiverHost,
  checkReceiverUrl,
  encodeCursor,
  EVENT_TYPES,
  newSecret,
  ReceiverRefused,
  type DeadLetter,
  type Endpoint,
  type EndpointBacklog,
  type EventType,
  type FeedCursor,
  type ReceiverRules,
} from '../../events/index.js';
import { audited, type AuditActor, type AuditStore } from './audit-log.js';

/** How long a rotated-out secret still signs, so receivers can switch without a gap. */
export const ROTATION_GRACE_HOURS = 24;

export interface EndpointRecords {
  create(endpoint: {
    id: string;
    url: string;
    types: readonly EventType[];
    secret: string;
  }): Promise<Endpoint>;
  get(id: string): Promise<Endpoint | undefined>;
  list(): Promise<Array<Endpoint & EndpointBacklog>>;
  setStatus(
    id: string,
    status: 'active' | 'disabled',
    reason?: string,
  ): Promise<Endpoint | undefined>;
  rotate(id: string, secret: string, graceHours: number): Promise<Endpoint | undefined>;
}

export interface LaneRecords {
  replay(
    endpointId: string,
    types: readonly EventType[],
    from: FeedCursor,
  ): Promise<{ lanes: number; orders: number }>;
  retryNow(endpointId: string): Promise<number>;
  deadLetters(endpointId: string, limit: number): Promise<DeadLetter[]>;
}

export interface EndpointView {
  id: string;
  url: string;
  events: EventType[];
  status: 'active' | 'disabled';
  disabledReason?: string;
  disabledAt?: string;
  createdAt: string;
  /** lanes (orders, other subjects) with events not yet acknowledged (dead letters aside) */
  pending?: number;
  deadLetters?: number;
  /** the age of the oldest event not yet acknowledged */
  oldestPendingSeconds?: number;
}

export interface DeadLetterView {
  /** its order's id: a lane of an order's events only */
  orderId?: string;
  /** the order id, or the product event's subject */
  subject: string;
  eventId: string;
  type: EventType;
  /** the order's version, or the subject's sequence number */
  version: number;
  /** replay from just before it: POST .../replay { from: cursorBefore } */
  cursor: string;
  events: number;
  attempts: number;
  error: string | null;
  deadAt: string;
}

function view(endpoint: Endpoint, backlog?: EndpointBacklog): EndpointView {
  return {
    id: endpoint.id,
    url: endpoint.url,
    events: endpoint.types,
    status: endpoint.status,
    ...(endpoint.disabledReason && { disabledReason: endpoint.disabledReason }),
    ...(endpoint.disabledAt && { disabledAt: endpoint.disabledAt.toISOString() }),
    createdAt: endpoint.createdAt.toISOString(),
    ...(backlog && {
      pending: backlog.pending,
      deadLetters: backlog.deadLetters,
      oldestPendingSeconds: backlog.oldestPendingAt
        ? Math.max(0, Math.round((Date.now() - backlog.oldestPendingAt.getTime()) / 1_000))
        : 0,
    }),
  };
}

/** The cursor just before `cursor` (its own position minus one): a replay from it includes it. */
const before = (cursor: FeedCursor): FeedCursor => ({
  txid: cursor.txid,
  position: cursor.position > 0n ? cursor.position - 1n : 0n,
});

export type Registration =
  | { code: 'created'; endpoint: EndpointView & { secret: string } }
  | { code: 'refused'; reason: string };

export type WebhookAction =
  | 'webhook-add'
  | 'webhook-disable'
  | 'webhook-enable'
  | 'webhook-rotate'
  | 'webhook-replay'
  | 'webhook-retry';

/** A change refused (the log records it `refused` with this code), answered as before. */
class EndpointRefusal extends QuietError {
  constructor(
    readonly code: 'receiver-refused' | 'unknown-webhook-endpoint',
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const unknown = (id: string) =>
  new EndpointRefusal('unknown-webhook-endpoint', 404, `no webhook endpoint ${id}`);

/** The endpoint as the log keeps it: never its secret. */
const withoutSecret = (endpoint: EndpointView & { secret?: string }): EndpointView => {
  const { secret: _secret, ...rest } = endpoint;
  return rest;
};

export class WebhookEndpoints {
  constructor(
    private readonly deps: {
      endpoints: EndpointRecords;
      lanes: LaneRecords;
      rules: ReceiverRules;
      audit: AuditStore;
      /** a finished change whose outcome could not be written (its row stays `started`) */
      onAuditLost?: (err: unknown) => void;
    },
  ) {}

  /** @param types - event types, or `*` for all of them */
  async register(url: string, types: readonly string[], actor: AuditActor): Promise<Registration> {
    try {
      const endpoint = await this.run(
        actor,
        'webhook-add',
        { url, events: types },
        async () => {
          let checked: URL;
          try {
            checked = checkReceiverUrl(url, this.deps.rules);
            await checkReceiverHost(checked, this.deps.rules);
          } catch (err) {
            if (err instanceof ReceiverRefused) {
              throw new EndpointRefusal('receiver-refused', 422, err.message);
            }
            throw err;
          }
          const wanted = types.includes('*')
            ? [...EVENT_TYPES]
            : EVENT_TYPES.filter((t) => types.includes(t));
          const secret = newSecret();
          const created = await this.deps.endpoints.create({
            id: `ep_${randomBytes(12).toString('base64url')}`,
            url: checked.href,
            types: wanted,
            secret,
          });
          return { ...view(created), secret };
        },
        withoutSecret,
      );
      return { code: 'created', endpoint };
    } catch (err) {
      if (err instanceof EndpointRefusal) return { code: 'refused', reason: err.message };
      throw err;
    }
  }

  /** Every endpoint's backlog, summed: what the dashboard shows. */
  async backlog(): Promise<{ pending: number; deadLetters: number }> {
    const all = await this.deps.endpoints.list();
    return {
      pending: all.reduce((n, e) => n + e.pending, 0),
      deadLetters: all.reduce((n, e) => n + e.deadLetters, 0),
    };
  }

  async list(): Promise<EndpointView[]> {
    return (await this.deps.endpoints.list()).map((e) => view(e, e));
  }

  setStatus(
    id: string,
    status: 'active' | 'disabled',
    actor: AuditActor,
  ): Promise<EndpointView | undefined> {
    const action = status === 'active' ? 'webhook-enable' : 'webhook-disable';
    return this.found(
      this.run(actor, action, { endpointId: id }, async () => {
        const endpoint = await this.deps.endpoints.setStatus(id, status);
        if (!endpoint) throw unknown(id);
        return view(endpoint);
      }),
    );
  }

  /** A new secret, answered once; the old one keeps signing for ROTATION_GRACE_HOURS. */
  rotate(id: string, actor: AuditActor): Promise<(EndpointView & { secret: string }) | undefined> {
    return this.found(
      this.run(
        actor,
        'webhook-rotate',
        { endpointId: id },
        async () => {
          const secret = newSecret();
          const endpoint = await this.deps.endpoints.rotate(id, secret, ROTATION_GRACE_HOURS);
          if (!endpoint) throw unknown(id);
          return { ...view(endpoint), secret };
        },
        withoutSecret,
      ),
    );
  }

  /**
   * Every event of the endpoint's types after `from` is delivered again (the same ids), each
   * subject's in version order; its dead letters live again. @returns how many lanes, and how
   * many of them are orders'
   */
  replay(
    id: string,
    from: FeedCursor,
    actor: AuditActor,
  ): Promise<{ orders: number; lanes: number } | undefined> {
    return this.found(
      this.run(actor, 'webhook-replay', { endpointId: id, from: encodeCursor(from) }, async () => {
        const endpoint = await this.deps.endpoints.get(id);
        if (!endpoint) throw unknown(id);
        const { lanes, orders } = await this.deps.lanes.replay(id, endpoint.types, from);
        return { orders, lanes };
      }),
    );
  }

  /**
   * Every lane of the endpoint waiting for its next attempt is tried now (a receiver's
   * Retry-After is kept); an attempt that fails is not counted. @returns how many lanes
   */
  retry(
    id: string,
    actor: AuditActor,
  ): Promise<{ code: 'retried'; lanes: number } | { code: 'disabled' } | undefined> {
    return this.found(
      this.run(actor, 'webhook-retry', { endpointId: id }, async () => {
        const endpoint = await this.deps.endpoints.get(id);
        if (!endpoint) throw unknown(id);
        if (endpoint.status !== 'active') return { code: 'disabled' as const };
        return { code: 'retried' as const, lanes: await this.deps.lanes.retryNow(id) };
      }),
    );
  }

  async deadLetters(id: string, limit: number): Promise<DeadLetterView[] | undefined> {
    if (!(await this.deps.endpoints.get(id))) return undefined;
    return (await this.deps.lanes.deadLetters(id, limit)).map((d) => ({
      ...(d.ofOrder && { orderId: d.subject }),
      subject: d.subject,
      eventId: d.eventId,
      type: d.type,
      version: d.version,
      cursor: encodeCursor(before(d.cursor)),
      events: d.events,
      attempts: d.attempts,
      error: d.error,
      deadAt: d.deadAt.toISOString(),
    }));
  }

  private run<T>(
    actor: AuditActor,
    action: WebhookAction,
    request: unknown,
    change: () => Promise<T>,
    kept?: (result: T) => unknown,
  ): Promise<T> {
    return audited(
      this.deps.audit,
      { actor, action, request, ...(kept && { kept }) },
      change,
      this.deps.onAuditLost,
    );
  }

  /** An unknown endpoint's refusal (recorded) as the callers take it: undefined. */
  private async found<T>(change: Promise<T>): Promise<T | undefined> {
    try {
      return await change;
    } catch (err) {
      if (err instanceof EndpointRefusal && err.code === 'unknown-webhook-endpoint') {
        return undefined;
      }
      throw err;
    }
  }
}
