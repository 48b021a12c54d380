/**
 * The challenge at the door (docs/fairness.md): a waiting-room join and a sale token of a product
 * that asks it need a solved challenge, sent as the `Challenge` header.
 *   - pow: an ALTCHA proof of work (altcha-lib), issued to one identity for one product, expiring,
 *     single use (its signature claimed with SET NX), and priced in time: it is not taken before
 *     a floor after its issue that grows with the identity's and its address block's flags, so a
 *     native solver gains nothing over a phone. A flagged address gets one challenge per flagged
 *     floor, so it mints at most 60 / 15 = 4 places a minute.
 *   - turnstile, hcaptcha: the widget's token, verified with the provider's siteverify endpoint,
 *     single use here too (its hash claimed with SET NX) and, for Turnstile, bound to the identity
 *     through the widget's cdata.
 * A missing or failed answer flags the identity and its block: the next floor is the flagged one.
 */
import { createChallenge, extractParams, verifySolution } from 'altcha-lib/v1';
import type { ChallengeConfig } from '../../config/index.js';
import type { Catalogue, ProductChallenge } from '../../inventory/index.js';
import { challengeRequired, verifyCaptcha } from './captcha.js';
import { refusal, type AdmissionRefusal } from './refusal.js';

/**
 * A product's door as this deployment checks it: the product's own challenge (seeded) or, when
 * it was seeded without one, the deployment's (CHALLENGE, for CHALLENGE_PRODUCTS or all).
 */
export interface ProductDoor {
  kind: 'pow' | 'turnstile' | 'hcaptcha';
  /** the HMAC key (pow) or the provider's secret; '' when this deployment has none for the kind */
  secret: string;
  siteKey: string | null;
  /** pow: the floor of an identity and address never flagged */
  cleanFloorMs: number;
}

/** What the rules and the floor know of an identity and its address block (shared in Redis). */
export interface DoorSignals {
  userFlags: number;
  blockFlags: number;
  /** distinct identities seen from the block (this hour) */
  blockIdentities: number;
}

/** The challenges' state, shared by every API process (access/'s Redis store). */
export interface ChallengeStore {
  /** notes the identity as seen from the block; answers the signals */
  signals(userId: string, block: string): Promise<DoorSignals>;
  /** a missing or failed answer: one flag more on the identity and on its block */
  flag(userId: string, block: string): Promise<void>;
  /** single use: true for the first claim of `id` within `ttlMs` */
  claim(id: string, userId: string, ttlMs: number): Promise<boolean>;
  /** one issue per `gapMs` for `who`: 0 when this one may go, else the ms left */
  space(who: string, gapMs: number): Promise<number>;
}

/** The door's check as admission and the room call it: the refusal, or undefined to go on. */
export type ChallengeCheck = Pick<ChallengeGate, 'check'>;

export type IssuedChallenge =
  | {
      kind: 'pow';
      algorithm: string;
      challenge: string;
      maxnumber: number;
      salt: string;
      signature: string;
      /** the answer is not taken before this moment (the floor after the issue) */
      answerAfter: string;
      floorMs: number;
      expiresAt: string;
    }
  | { kind: 'turnstile' | 'hcaptcha'; siteKey: string | null };

/** ~65 000 SHA-256 hashes at most, as the field's public proofs of work: the floor is the price. */
export const POW_MAX_NUMBER = 65_000;

export class ChallengeGate {
  constructor(
    private readonly deps: {
      config: ChallengeConfig;
      store: ChallengeStore;
      /** the products' own challenges (their seeds) */
      catalogue: Pick<Catalogue, 'known' | 'get'>;
      /** identities of one block past which each is flagged (FAIRNESS_IDENTITIES_PER_BLOCK) */
      identitiesPerBlock: number;
      /** the address block of a client address */
      blockOf: (ip: string) => string;
      now?: () => number;
    },
  ) {}

  /**
   * The door of a product seeded with `setting`: its own challenge wins; null turns it off;
   * 'default' is the deployment's (CHALLENGE, for CHALLENGE_PRODUCTS or every product).
   * @returns null when the product's door asks no challenge
   */
  doorOf(productId: string, setting: ProductChallenge | null | 'default'): ProductDoor | null {
    const { kind, products, keys, cleanFloorMs } = this.deps.config;
    let chosen: ProductChallenge | null;
    if (setting !== 'default') chosen = setting;
    else if (kind === 'off' || (products !== null && !products.includes(productId))) chosen = null;
    else chosen = { kind };
    if (!chosen) return null;
    if (chosen.kind === 'pow') {
      return {
        kind: 'pow',
        secret: keys.pow ?? '',
        siteKey: null,
        cleanFloorMs: chosen.floorMs ?? cleanFloorMs,
      };
    }
    const provider = keys[chosen.kind];
    return {
      kind: chosen.kind,
      secret: provider?.secret ?? '',
      siteKey: provider?.siteKey ?? null,
      cleanFloorMs,
    };
  }

  /** The door of `productId` now (its view in memory, or read); null: none, or no such product. */
  async doorNow(productId: string): Promise<ProductDoor | null> {
    const view = await this.viewOf(productId);
    return view ? this.doorOf(productId, view.challenge) : null;
  }

  private async viewOf(productId: string) {
    const { catalogue } = this.deps;
    return catalogue.known(productId) ?? (await catalogue.get(productId));
  }

  /**
   * The floor between a challenge's issue and its answer: the clean one, or the flagged one
   * doubled per further flag (15, 30, 60 s by default), the identity's and its block's together.
   */
  floorMs(signals: DoorSignals, cleanFloorMs = this.deps.config.cleanFloorMs): number {
    const s = signals;
    const { flaggedFloorMs } = this.deps.config;
    const crowded = s.blockIdentities > this.deps.identitiesPerBlock ? 1 : 0;
    const flags = s.userFlags + s.blockFlags + crowded;
    return flags === 0 ? cleanFloorMs : flaggedFloorMs * 2 ** Math.min(2, flags - 1);
  }

  async issue(
    productId: string,
    userId: string,
    ip: string,
  ): Promise<IssuedChallenge | AdmissionRefusal> {
    const { config, store } = this.deps;
    const view = await this.viewOf(productId);
    if (!view) return refusal('unknown-product', `no product ${productId}`);
    const door = this.doorOf(productId, view.challenge);
    if (!door) {
      return refusal('no-challenge-needed', `the door of ${productId} asks no challenge`);
    }
    if (door.kind !== 'pow') return { kind: door.kind, siteKey: door.siteKey };
    if (!door.secret) return unconfigured(door.kind);
    const block = this.deps.blockOf(ip);
    const signals = await store.signals(userId, block);
    const floorMs = this.floorMs(signals, door.cleanFloorMs);
    if (floorMs > door.cleanFloorMs) {
      const who =
        signals.blockFlags > 0 || signals.blockIdentities > this.deps.identitiesPerBlock
          ? `b:${block}`
          : `u:${userId}`;
      const waitMs = await store.space(who, config.flaggedFloorMs);
      if (waitMs > 0) {
        return refusal(
          'challenge-spaced',
          `this identity or address is flagged: one challenge per ${config.flaggedFloorMs / 1_000} s`,
          Math.ceil(waitMs / 1_000),
        );
      }
    }
    const now = this.now();
    const expires = now + config.ttlSeconds * 1_000;
    const c = await createChallenge({
      hmacKey: door.secret,
      maxNumber: POW_MAX_NUMBER,
      expires: new Date(expires),
      params: { u: userId, p: productId, t: String(now), f: String(floorMs) },
    });
    return {
      kind: 'pow',
      algorithm: c.algorithm,
      challenge: c.challenge,
      maxnumber: c.maxnumber ?? POW_MAX_NUMBER,
      salt: c.salt,
      signature: c.signature,
      answerAfter: new Date(now + floorMs).toISOString(),
      floorMs,
      expiresAt: new Date(expires).toISOString(),
    };
  }

  /**
   * The door: undefined when `solution` answers a challenge this identity may use now for this
   * product (and claims it), else the refusal (the identity and its block flagged for a missing,
   * wrong, foreign, replayed or early answer). Products that ask none pass.
   */
  async check(
    productId: string,
    userId: string,
    ip: string,
    solution: string | undefined,
  ): Promise<AdmissionRefusal | undefined> {
    const door = await this.doorNow(productId);
    if (!door) return undefined;
    if (!door.secret) return unconfigured(door.kind);
    const block = this.deps.blockOf(ip);
    const refused = await (door.kind === 'pow'
      ? this.checkPow(productId, userId, solution, door.secret)
      : verifyCaptcha(this.deps, door.kind, door.secret, userId, ip, solution));
    if (
      refused &&
      refused.code !== 'challenge-expired' &&
      refused.code !== 'challenge-unverified'
    ) {
      await this.deps.store.flag(userId, block);
    }
    return refused;
  }

  private async checkPow(
    productId: string,
    userId: string,
    solution: string | undefined,
    hmacKey: string,
  ) {
    const { config } = this.deps;
    if (!solution) return challengeRequired(productId, 'pow');
    let payload: { salt?: unknown; signature?: unknown };
    try {
      payload = JSON.parse(Buffer.from(solution, 'base64').toString()) as typeof payload;
    } catch {
      return refusal('challenge-invalid', 'the Challenge header is not a base64 ALTCHA payload');
    }
    if (typeof payload?.salt !== 'string' || typeof payload.signature !== 'string') {
      return refusal('challenge-invalid', 'the Challenge header is not a base64 ALTCHA payload');
    }
    const params = extractParams(payload as Parameters<typeof extractParams>[0]);
    const now = this.now();
    if (!(await verifySolution(solution, hmacKey, false))) {
      return refusal(
        'challenge-invalid',
        'the challenge was not solved, or not issued by this service',
      );
    }
    if (Number(params.expires) * 1_000 <= now) {
      return refusal('challenge-expired', 'the challenge has expired: ask for a new one');
    }
    if (params.u !== userId || params.p !== productId) {
      return refusal('challenge-foreign', 'the challenge was issued to another shopper or product');
    }
    const readyAt = Number(params.t) + Number(params.f);
    if (now < readyAt) {
      return refusal(
        'challenge-too-soon',
        `this challenge is answered from ${new Date(readyAt).toISOString()} (its floor after the issue)`,
        Math.ceil((readyAt - now) / 1_000),
      );
    }
    const ttlMs = config.ttlSeconds * 1_000 + 60_000;
    if (!(await this.deps.store.claim(payload.signature, userId, ttlMs))) {
      return refusal(
        'challenge-replayed',
        'this challenge was answered already: ask for a new one',
      );
    }
    return undefined;
  }

  private now(): number {
    return (this.deps.now ?? Date.now)();
  }
}

/** A product seeded with a kind whose keys this process lacks: refused, never let through. */
const unconfigured = (kind: string) =>
  refusal(
    'challenge-unverified',
    `this door asks a ${kind} challenge and this process has no key for it (CHALLENGE_${kind.toUpperCase()}_SECRET)`,
    5,
  );
