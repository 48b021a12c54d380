/**
 * Who may use the admin routes, shared by every API process through Redis:
 *
 * - The admin token (bearer header or the dashboard's login form), throttled per client
 *   address and token prefix (docs/admin-access.md): every wrong token takes one from a GCRA
 *   bucket (ADMIN_GUESS_LIMIT, lua/rateLimit-1.lua) of its address and of whether its first
 *   PREFIX characters are the admin token's; every attempt first asks whether that bucket still
 *   has room (lua/rateLimitPeek-1.lua), so past the limit the bucket answers 429 for any token
 *   in it, the right one included (otherwise the one answer that is not 429 would name the right
 *   guess). Guesses that do not start as the admin token does, which is every guess of one who
 *   does not know it, fill a bucket the right token is never in: they cannot lock the admin out.
 * - Sessions (the dashboard and Bull Board in a browser): a random id whose Redis key lives as
 *   long as the session, in a cookie signed with ADMIN_TOKEN. A logout deletes the key, so the
 *   cookie is refused by every process at once; rotating ADMIN_TOKEN still revokes them all.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { RateLimit } from '../../config/index.js';
import { ProblemError } from '../../errors.js';
import type { RateDecision } from '../../access/index.js';
import { sameSignature } from '../same-signature.js';

const digest = (text: string) => createHash('sha256').update(text).digest();

/**
 * Characters of a presented token that choose its guess bucket: the admin token's own first ones
 * (its bucket), or any other (the address's). What a guesser learns past the limit is whether a
 * guess starts right (401 or 403 in its own bucket, against 429), 4 characters of at least 16.
 */
export const PREFIX = 4;

/** Whether `token` is the admin token, compared in constant time (false when none is set). */
export function isAdminToken(token: string, adminToken: string | undefined): boolean {
  return adminToken !== undefined && timingSafeEqual(digest(token), digest(adminToken));
}

export const SESSION_MS = 12 * 3_600_000;

/** `v2.<id>.<expires ms>.<base64url HMAC-SHA256 of "admin-session.<id>.<expires>">` */
const SESSION = /^v2\.([A-Za-z0-9_-]{22})\.(\d{13})\.([A-Za-z0-9_-]{43})$/;

const sign = (secret: string, id: string, expires: number) =>
  createHmac('sha256', secret).update(`admin-session.${id}.${expires}`).digest('base64url');

export interface AdminSession {
  /** the cookie's value */
  value: string;
  expires: Date;
}

/** Where the guesses and sessions are kept, shared by every API process (inventory's store). */
export interface AdminSessions {
  /** 0 when one more wrong token from `address` would pass, else ms until it would */
  peekGuess(address: string, limit: RateLimit): Promise<number>;
  /** counts one wrong token from `address` */
  takeGuess(address: string, limit: RateLimit): Promise<RateDecision>;
  create(id: string, ttlMs: number): Promise<void>;
  exists(id: string): Promise<boolean>;
  remove(id: string): Promise<void>;
}

export class AdminAccess {
  constructor(
    private readonly deps: {
      sessions: AdminSessions;
      adminToken: string | undefined;
      guessLimit: RateLimit;
    },
  ) {}

  /**
   * One attempt with an admin token from `address`: true for the right token, false for a wrong
   * one (counted against the address).
   * @throws ProblemError 429 + Retry-After while the address is past ADMIN_GUESS_LIMIT
   */
  async check(token: string, address: string): Promise<boolean> {
    const { sessions, guessLimit, adminToken } = this.deps;
    const right = isAdminToken(token, adminToken);
    const startsRight =
      adminToken !== undefined && isAdminToken(token.slice(0, PREFIX), adminToken.slice(0, PREFIX));
    const bucket = startsRight ? `${address} admin-prefix` : address;
    if (right) {
      const retryMs = await sessions.peekGuess(bucket, guessLimit);
      if (retryMs > 0) throw tooManyGuesses(retryMs, guessLimit);
      return true;
    }
    const d = await sessions.takeGuess(bucket, guessLimit);
    if (!d.allowed) throw tooManyGuesses(d.retryMs, guessLimit);
    return false;
  }

  /** A new session (after a right token). */
  async open(): Promise<AdminSession> {
    const secret = this.secret();
    const id = randomBytes(16).toString('base64url');
    const expires = Date.now() + SESSION_MS;
    await this.deps.sessions.create(id, SESSION_MS);
    return {
      value: `v2.${id}.${expires}.${sign(secret, id, expires)}`,
      expires: new Date(expires),
    };
  }

  /** Whether `value` is a session cookie of ours, unexpired and not logged out. */
  async valid(value: string | undefined): Promise<boolean> {
    const id = this.idOf(value);
    return id !== undefined && (await this.deps.sessions.exists(id));
  }

  /** Logs the session out, for every process. */
  async close(value: string | undefined): Promise<void> {
    const id = this.idOf(value);
    if (id !== undefined) await this.deps.sessions.remove(id);
  }

  /** The session id of a well-formed, correctly signed, unexpired cookie value. */
  private idOf(value: string | undefined): string | undefined {
    const m = value === undefined || !this.deps.adminToken ? null : SESSION.exec(value);
    if (!m) return undefined;
    const [, id, expiresText, signature] = m as unknown as [string, string, string, string];
    const expires = Number(expiresText);
    if (expires <= Date.now()) return undefined;
    return sameSignature(signature, sign(this.deps.adminToken!, id, expires)) ? id : undefined;
  }

  private secret(): string {
    if (!this.deps.adminToken) throw new Error('no ADMIN_TOKEN: no session can be opened');
    return this.deps.adminToken;
  }
}

function tooManyGuesses(retryMs: number, limit: RateLimit): ProblemError {
  const seconds = Math.max(1, Math.ceil(retryMs / 1_000));
  return new ProblemError({
    status: 429,
    code: 'too-many-guesses',
    title: 'Too many wrong admin tokens',
    detail:
      `over ${limit.burst} wrong admin tokens from this address ` +
      `(ADMIN_GUESS_LIMIT ${limit.rate}/${limit.periodMs === 1_000 ? 's' : 'm'}); retry in ${seconds} s`,
    headers: { 'Retry-After': String(seconds) },
  });
}
