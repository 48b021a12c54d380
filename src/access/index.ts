/**
 * Who may come in, kept in Redis and shared by every API process: the rate-limit buckets the
 * purchase routes take from, and the admin routes' wrong-token buckets and sessions. These stores
 * implement the services' `RateLimiter` and `AdminSessions` ports; the sale's own records live in
 * inventory/.
 */
export { AdminSessionStore } from './admin-session-store.js';
export { RateLimitStore, type RateDecision } from './rate-limit-store.js';
export { LocalRateLimiter } from './local-rate.js';
