/**
 * Admission control in front of the sale, cheapest check first: a sale token is checked in
 * process; then the rate limits per shopper and per client address (shared by every process: a
 * client address's bucket leased by each process, a shopper's taken by a purchase's home deduct
 * or a script of its own). Each check returns a refusal code, never an HTTP error.
 * The per-process cap on requests in flight is the HTTP layer's (it must refuse before parsing).
 */
import type { Config, RateLimit } from '../../config/index.js';
import type { RateDecision } from '../../access/index.js';
import { homeSegment, type Catalogue, type ProductView } from '../../inventory/index.js';
import { shardDown } from '../../outages.js';
import type { FairnessNotes } from '../fairness/index.js';
import type { ChallengeCheck } from './challenge.js';
import type { AdmissionRefusal, RateState } from './refusal.js';
import { checkSaleToken, signSaleToken } from './sale-token.js';

export type { AdmissionRefusal, RateState };

export type LimitedRoute = 'seckill' | 'token' | 'orders' | 'queue';

/** A check's answer: the refusal, or undefined when the request may go on. */
type Refused = AdmissionRefusal | undefined;

export interface SaleToken {
  token: string;
  expiresAt: string;
  startsAt: string | null;
}

const WHY: Record<string, string> = {
  malformed: 'the sale token is not one this service issued',
  signature: 'the sale token signature is not valid',
  expired: 'the sale token has expired: ask for a new one',
  user: 'the sale token was issued to another shopper',
  product: 'the sale token is for another product',
  epoch: 'the sale token is for an earlier sale of this product',
};

/** A rate-limit check: the headers' state (none when no limit is set), or the refusal. */
export type LimitCheck =
  | { state: RateState | undefined; refusal?: undefined }
  | { state: RateState; refusal: AdmissionRefusal };

/** A purchase's limits with the shopper's cell left to its sale, the address's taken. */
export interface PendingLimits {
  userId: string;
  /** the shopper's limit, a cell of which the sale's home deduct takes */
  limit: RateLimit;
  address: RateDecision | undefined;
  view: ProductView;
}

/** {@link Admission.limitPurchase}: checked now, or pending the sale. */
export type PurchaseLimits = { check: LimitCheck } | (PendingLimits & { check?: undefined });

const forbidden = (detail: string): AdmissionRefusal => ({ code: 'invalid-sale-token', detail });

/** The shared rate-limit buckets (access/'s RateLimitStore: one Redis script per take). */
export interface RateLimiter {
  take(
    route: LimitedRoute,
    scope: 'user' | 'ip',
    id: string,
    limit: RateLimit,
    /** a shopper's home segment of the product bought: their bucket lives beside it */
    home?: { productId: string; segment: number },
  ): Promise<RateDecision>;
}

export class Admission {
  private readonly limits: RateLimit[];
  private readonly orderLimits: RateLimit[];

  constructor(
    private readonly deps: {
      rateLimiter: RateLimiter;
      catalogue: Pick<Catalogue, 'known' | 'get'>;
      config: Config['admission'];
      /** the challenge at the door of products that ask one */
      door?: ChallengeCheck | undefined;
      /** who tried each sale (the fairness report) */
      notes?: Pick<FairnessNotes, 'tried' | 'failed'> | undefined;
    },
  ) {
    this.limits = [deps.config.userLimit, deps.config.ipLimit].filter(
      (l): l is RateLimit => l !== undefined,
    );
    this.orderLimits = [deps.config.orderLimit];
  }

  get limited(): boolean {
    return this.limits.length > 0;
  }

  /**
   * Takes one request from the shopper's and the client address's buckets (in parallel).
   * @returns the headers' state (undefined when no limit is configured), or a 'rate-limited'
   *   refusal with its Retry-After
   */
  async limit(
    route: LimitedRoute,
    userId: string,
    ip: string,
    productId?: string,
  ): Promise<LimitCheck> {
    if (this.limits.length === 0) return { state: undefined };
    const { userLimit, ipLimit } = this.deps.config;
    const buckets = this.deps.rateLimiter;
    // a purchase's shopper bucket lives beside their home segment (one shard for their own keys)
    const view = productId === undefined ? undefined : this.deps.catalogue.known(productId);
    const home = view && { productId: view.id, segment: homeSegment(userId, view.segments) };
    const checks = await Promise.all([
      userLimit && buckets.take(route, 'user', userId, userLimit, home),
      ipLimit && this.takeAddress(route, ip, ipLimit),
    ]);
    return this.decided(checks[0], checks[1]);
  }

  /**
   * A purchase's limits: the client address's bucket now; the shopper's, when the
   * product's view is known (their bucket lives beside their home segment), left to the sale's
   * home deduct, which takes its cell in the same call (`limit`, for the sale). Then
   * {@link settlePurchase} gives the same state or refusal {@link limit} would have.
   * @returns a refusal now (the address's bucket: the shopper's is taken too, as {@link limit}
   *   takes both), or what to settle after the sale
   */
  async limitPurchase(userId: string, ip: string, productId: string): Promise<PurchaseLimits> {
    const { userLimit, ipLimit } = this.deps.config;
    const view = this.deps.catalogue.known(productId);
    if (!userLimit || !view) return { check: await this.limit('seckill', userId, ip, productId) };
    const address = ipLimit && (await this.takeAddress('seckill', ip, ipLimit));
    if (address && !address.allowed) {
      const home = { productId: view.id, segment: homeSegment(userId, view.segments) };
      const user = await this.deps.rateLimiter.take('seckill', 'user', userId, userLimit, home);
      return { check: this.decided(user, address) };
    }
    return { userId, limit: userLimit, address, view };
  }

  /**
   * The state or refusal of a purchase's limits once its sale ran: the shopper's cell as the home
   * deduct took it, or taken now when the sale never asked (it ended before its home deduct, or
   * an Idempotency-Key's answer was replayed), as {@link limit} would have before the sale.
   * @param bucket - the shopper's cell as the home deduct took it (none: taken now, unless `lost`:
   *   the sale's answer was lost, and its cell is not taken again)
   */
  async settlePurchase(limits: PendingLimits, bucket?: RateDecision, lost = false) {
    const { userId, limit, address, view } = limits;
    let user = bucket;
    if (!user && !lost) {
      const home = { productId: view.id, segment: homeSegment(userId, view.segments) };
      user = await this.deps.rateLimiter
        .take('seckill', 'user', userId, limit, home)
        .catch(failOpenOnSickShard); // the sale answered already (a sick shard: 503)
    }
    return this.decided(user, address);
  }

  /**
   * Fails open while its shard is known sick (docs/decisions.md): an address's bucket is on one
   * shard for all its shoppers, and a purchase must not depend on more than its own.
   */
  private takeAddress(route: LimitedRoute, ip: string, limit: RateLimit) {
    return this.deps.rateLimiter.take(route, 'ip', ip, limit).catch(failOpenOnSickShard);
  }

  /** The headers' state of the two decisions (the tightest), or the refusal. */
  private decided(user: RateDecision | undefined, address: RateDecision | undefined): LimitCheck {
    const { userLimit, ipLimit } = this.deps.config;
    let tightest: RateState['tightest'] | undefined;
    const asked = [[userLimit, user] as const, [ipLimit, address] as const];
    for (const [limit, decision] of asked) {
      if (!limit || !decision) continue;
      const worse =
        !tightest ||
        (!decision.allowed && tightest.decision.allowed) ||
        (decision.allowed === tightest.decision.allowed &&
          (decision.allowed
            ? decision.remaining < tightest.decision.remaining
            : decision.retryMs > tightest.decision.retryMs));
      if (worse) tightest = { limit, decision };
    }
    if (!tightest) return { state: undefined }; // the only limit failed open
    return checked({ limits: this.limits, tightest });
  }

  /**
   * Takes one request from the shopper's bucket of the order routes (RATE_LIMIT_ORDERS): an
   * order id of the older format searches up to 50 products, so reads are not free.
   */
  async limitOrders(userId: string): Promise<LimitCheck> {
    const limit = this.deps.config.orderLimit;
    const decision = await this.deps.rateLimiter.take('orders', 'user', userId, limit);
    return checked({ limits: this.orderLimits, tightest: { limit, decision } });
  }

  /**
   * For a product seeded with requireSaleToken: the token must be this shopper's, for this
   * product and sale, and not expired. Other products pass. In process, once the view is loaded.
   * @returns the refusal ('invalid-sale-token', 'sale-tokens-disabled'), or undefined: admitted
   */
  checkToken(
    productId: string,
    userId: string,
    token: string | undefined,
  ): Refused | Promise<Refused> {
    // the common case, a loaded product without tokens, costs no await
    const known = this.deps.catalogue.known(productId);
    if (known) return this.checkTokenOf(known, userId, token);
    const view = this.deps.catalogue.get(productId);
    return view instanceof Promise
      ? view.then((v) => (v ? this.checkTokenOf(v, userId, token) : undefined))
      : view
        ? this.checkTokenOf(view, userId, token)
        : undefined; // unknown products are the sale's to answer (404)
  }

  private checkTokenOf(view: ProductView, userId: string, token: string | undefined): Refused {
    if (!view.requireSaleToken) return undefined;
    const productId = view.id;
    const secret = this.deps.config.saleTokenSecret;
    if (!secret) return tokensOff();
    if (!token) {
      return forbidden(
        view.draw
          ? drawDetail(productId)
          : view.room
            ? `this sale admits through its waiting room: POST /products/${productId}/queue, and send the sale token it gives once admitted as Sale-Token`
            : `this sale needs a Sale-Token header: POST /products/${productId}/sale-token first`,
      );
    }
    const want = { userId, productId, epoch: view.epoch, now: Date.now() };
    const r = checkSaleToken(token, want, secret);
    return r.ok ? undefined : forbidden(WHY[r.why]!);
  }

  /**
   * A sale token for the shopper: from SALE_TOKEN_LEAD_S before the start until the end, valid
   * SALE_TOKEN_TTL_S from the start (or from now, once started).
   * @returns the token, or the refusal: 'unknown-product', 'too-early', 'ended',
   *   'sale-tokens-disabled', 'no-sale-token-needed'
   */
  async issueToken(
    productId: string,
    userId: string,
    at: {
      ip: string;
      challenge?: string | undefined;
      fingerprint?: string | undefined;
      accountCreatedAt?: number | undefined;
    } = { ip: '' },
  ): Promise<SaleToken | AdmissionRefusal> {
    const view = await this.deps.catalogue.get(productId);
    if (!view) return { code: 'unknown-product', detail: `no product ${productId}` };
    if (view.room) {
      return {
        code: 'waiting-room',
        detail: view.draw
          ? drawDetail(productId)
          : `${productId} admits through its waiting room: POST /products/${productId}/queue`,
      };
    }
    const { door, notes } = this.deps;
    const refused = await door?.check(productId, userId, at.ip, at.challenge);
    if (refused) {
      notes?.failed(productId, view.epoch, userId, at.ip);
      return refused;
    }
    notes?.tried(productId, view.epoch, userId, at.ip, at);
    const secret = this.deps.config.saleTokenSecret;
    if (!secret && !view.requireSaleToken) {
      return {
        code: 'no-sale-token-needed',
        detail: `the sale of ${productId} needs no sale token: POST /seckill without one (this deployment issues none: SALE_TOKEN_SECRET is not set)`,
      };
    }
    if (!secret) return tokensOff();
    const now = Date.now();
    const { saleTokenLeadSeconds: lead, saleTokenTtlSeconds: ttl } = this.deps.config;
    const opensAt = view.startsAt - lead * 1_000;
    if (now < opensAt) {
      return {
        code: 'too-early',
        detail: `sale tokens for ${productId} are issued from ${new Date(opensAt).toISOString()}`,
        retryAfterSeconds: Math.ceil((opensAt - now) / 1_000),
      };
    }
    if (ended(view, now)) return { code: 'ended', detail: `the sale of ${productId} has ended` };
    const expiresAt = Math.max(now, view.startsAt) + ttl * 1_000;
    const token = signSaleToken({ userId, productId, epoch: view.epoch, expiresAt }, secret);
    return {
      token,
      expiresAt: new Date(expiresAt).toISOString(),
      startsAt: view.startsAt ? new Date(view.startsAt).toISOString() : null,
    };
  }
}

const ended = (view: ProductView, now: number) => view.endsAt > 0 && now >= view.endsAt;

/** The check's answer: the state, and the refusal when its tightest bucket is empty. */
export function checked(state: RateState): LimitCheck {
  if (state.tightest.decision.allowed) return { state };
  const refusal: AdmissionRefusal = {
    code: 'rate-limited',
    detail: `over the ${state.tightest.limit.name} limit of ${describe(state.tightest.limit)}`,
    retryAfterSeconds: Math.max(1, Math.ceil(state.tightest.decision.retryMs / 1_000)),
    rate: state,
  };
  return { state, refusal };
}

const describe = (limit: RateLimit) =>
  `${limit.rate}/${limit.periodMs === 1_000 ? 's' : 'm'} (bursts of ${limit.burst})`;

const tokensOff = (): AdmissionRefusal => ({
  code: 'sale-tokens-disabled',
  detail: 'this sale needs sale tokens: set SALE_TOKEN_SECRET',
});

/** A bucket refused unsent (its shard failed a moment ago) counts as no decision; else rethrown. */
function failOpenOnSickShard(err: unknown): undefined {
  if (shardDown(err)) return undefined;
  throw err;
}

/** A draw's room takes no join: its winners' tokens come with their entries. */
const drawDetail = (productId: string) =>
  `this sale is a draw: a winner buys with the Sale-Token its entry gives (GET /products/${productId}/draw/entry)`;
