/**
 * "It's your turn", by Web Push (docs/queue-page.md#web-push): a shopper's queue page subscribes
 * (the browser's push service, this service's VAPID key) and hands the subscription over with the
 * notices' words in the shopper's language; when a tick of the room's admitter admits them, or
 * names their admission as about to run out, the admitting process sends them a push, so a closed
 * tab still hears its turn. Best effort: a push lost with its process, or refused by the push
 * service, is not sent again (the room's events are the durable way, docs/events.md).
 */
import { z } from 'zod';
import type { Catalogue, ProductView, RoomMoments, RoomStore } from '../../inventory/index.js';
import type { Admission } from '../admission/index.js';
import type { PlaceAnswer } from './place-view.js';

const base64url = (bytes: number) =>
  z.string().regex(new RegExp(`^[A-Za-z0-9_-]{${Math.ceil((bytes * 4) / 3)}}={0,2}$`));

/** What a page sends: the browser's subscription (PushSubscription.toJSON()) and its words. */
export const pushRequest = z.strictObject({
  subscription: z.object({
    endpoint: z.url().max(1_024),
    expirationTime: z.number().nullable().optional(),
    keys: z.strictObject({ p256dh: base64url(65), auth: base64url(16) }),
  }),
  /** the notices' text in the shopper's language; {until} is filled in by the page's worker */
  texts: z.strictObject({
    admitted: z.string().min(1).max(200),
    expiring: z.string().min(1).max(200),
  }),
  /** BCP 47: the times in the notices are written for it */
  lang: z
    .string()
    .regex(/^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$/)
    .max(35),
});

export type PushRequest = z.output<typeof pushRequest>;

/** What is kept per shopper (as JSON in the room's push hash). */
interface PushRecord {
  subscription: PushRequest['subscription'];
  texts: PushRequest['texts'];
  lang: string;
}

export type PushKind = 'admitted' | 'expiring';

/** A push subscription handed over: kept, or why not. */
export type PushAnswer =
  | { kind: 'kept' }
  /** the subscription names a push service this service does not call */
  | { kind: 'push-service-refused'; origin: string }
  | Extract<PlaceAnswer, { kind: 'refused' | 'unknown-product' | 'no-room' | 'not-joined' }>;

/** The payload the page's service worker shows (queue-page/sw.js). */
export interface TurnPayload {
  kind: PushKind;
  productId: string;
  /** when the admission ends (ISO) */
  until: string;
  /** the queue page to open */
  url: string;
  title: string;
  body: string;
  lang: string;
}

/** Sends one push; `gone` when the push service says the subscription is no more (404, 410). */
export type PushSend = (
  subscription: PushRecord['subscription'],
  payload: string,
  options: { ttlSeconds: number; topic: string },
) => Promise<{ gone: boolean }>;

export interface TurnPushMetrics {
  sent(kind: PushKind, outcome: 'sent' | 'gone' | 'failed' | 'dropped'): void;
}

/** Pushes in flight per process, and waiting behind them: past it a push is dropped. */
const IN_FLIGHT = 16;
const MAX_WAITING = 10_000;

export class TurnPush {
  private inFlight = 0;
  private readonly waiting: Array<() => Promise<void>> = [];

  constructor(
    private readonly deps: {
      /** the room's store: the shoppers' places and their subscriptions */
      store: Pick<RoomStore, 'place' | 'savePush' | 'readPush' | 'dropPush'>;
      catalogue: Pick<Catalogue, 'get'>;
      /** the join's rate limits: a subscription takes them too */
      admission: Pick<Admission, 'limit'>;
      send: PushSend;
      /** origins (https://host, a leading `*.` for any subdomain) a subscription may name */
      services: readonly string[];
      /** the page's path for a product (the notice opens it) */
      pageUrl: (productId: string) => string;
      shopName: string;
      metrics?: TurnPushMetrics | undefined;
      onError?: (err: unknown) => void;
    },
  ) {}

  /** Whether a subscription's push service is one this service may call. */
  allowed(endpoint: string): boolean {
    let url: URL;
    try {
      url = new URL(endpoint);
    } catch {
      return false;
    }
    return this.deps.services.some((origin) => {
      const [scheme, host] = origin.split('://') as [string, string];
      if (`${scheme}:` !== url.protocol) return false;
      if (host.startsWith('*.')) return url.host.endsWith(host.slice(1));
      return url.host === host;
    });
  }

  /**
   * Keeps a shopper's subscription for their turn's notices in this sale: only a shopper who holds
   * a place (one read), through the join's rate limits.
   */
  async subscribe(
    productId: string,
    userId: string,
    ip: string,
    request: PushRequest,
  ): Promise<PushAnswer> {
    const limited = await this.deps.admission.limit('queue', userId, ip);
    if (limited.refusal) return { kind: 'refused', refusal: limited.refusal };
    const view = await this.deps.catalogue.get(productId);
    if (!view) return { kind: 'unknown-product' };
    if (!view.room) return { kind: 'no-room' };
    const endpoint = request.subscription.endpoint;
    if (!this.allowed(endpoint)) {
      return { kind: 'push-service-refused', origin: new URL(endpoint).origin };
    }
    if (!(await this.deps.store.place(productId, view.epoch, userId))) {
      return { kind: 'not-joined' };
    }
    const record: PushRecord = {
      subscription: request.subscription,
      texts: request.texts,
      lang: request.lang,
    };
    await this.deps.store.savePush(productId, view, userId, JSON.stringify(record));
    return { kind: 'kept' };
  }

  /** A tick's moments: a push to each shopper admitted, or about to run out, who subscribed. */
  async notify(view: ProductView, moments: RoomMoments): Promise<void> {
    const turns = new Map<string, { kind: PushKind; until: number }>();
    const admittedUntil = moments.at + view.room!.settings.admittedForSeconds * 1_000;
    for (const u of moments.admitted) turns.set(u, { kind: 'admitted', until: admittedUntil });
    for (const { userId, endsAt } of moments.expiring) {
      if (!turns.has(userId)) turns.set(userId, { kind: 'expiring', until: endsAt });
    }
    if (turns.size === 0) return;
    const records = await this.deps.store.readPush(view.id, view.epoch, [...turns.keys()]);
    for (const [userId, raw] of records) {
      const turn = turns.get(userId)!;
      this.enqueue(view, userId, turn.kind, JSON.parse(raw) as PushRecord, turn.until);
    }
  }

  private enqueue(
    view: ProductView,
    userId: string,
    kind: PushKind,
    record: PushRecord,
    until: number,
  ): void {
    if (this.waiting.length >= MAX_WAITING) {
      this.deps.metrics?.sent(kind, 'dropped');
      return;
    }
    this.waiting.push(() => this.sendOne(view, userId, kind, record, until));
    this.pump();
  }

  private pump(): void {
    while (this.inFlight < IN_FLIGHT && this.waiting.length > 0) {
      const job = this.waiting.shift()!;
      this.inFlight++;
      void job().finally(() => {
        this.inFlight--;
        this.pump();
      });
    }
  }

  private async sendOne(
    view: ProductView,
    userId: string,
    kind: PushKind,
    record: PushRecord,
    ends: number,
  ): Promise<void> {
    const payload: TurnPayload = {
      kind,
      productId: view.id,
      until: new Date(ends).toISOString(),
      url: this.deps.pageUrl(view.id),
      title: this.deps.shopName,
      body: record.texts[kind],
      lang: record.lang,
    };
    try {
      const { gone } = await this.deps.send(record.subscription, JSON.stringify(payload), {
        // a turn's notice is worth nothing once the turn is over
        ttlSeconds: Math.max(1, Math.floor((ends - Date.now()) / 1_000)),
        topic: `turn-${kind}`,
      });
      if (gone) await this.deps.store.dropPush(view.id, view.epoch, userId);
      this.deps.metrics?.sent(kind, gone ? 'gone' : 'sent');
    } catch (err) {
      this.deps.metrics?.sent(kind, 'failed');
      this.deps.onError?.(err);
    }
  }
}
