/**
 * Who may come in, kept in Redis and shared by every API process: the rate-limit buckets the
 * purchase routes take from, the admin routes' wrong-token buckets and sessions, and the notice
 * that makes every API process fetch the identity provider's keys again. These stores
 * implement the services' `RateLimiter` and `AdminSessions` ports; the sale's own records live in
 * inventory/.
 */
export { AdminSessionStore } from './admin-session-store.js';
export {
  KeyRefreshNotices,
  type KeyRefreshNoticesOptions,
  type NoticeSubscriber,
} from './key-refresh-notices.js';
export { RateLimitStore, type RateDecision } from './rate-limit-store.js';
export { LocalRateLimiter } from './local-rate.js';
export { DoorStore } from './door-store.js';
