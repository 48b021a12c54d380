/**
 * The operator's tools: seeding, the drop's controls, the audit log, admin access, webhooks, the
 * identity provider's keys fetched again.
 */
export {
  audited,
  type AuditActor,
  type AuditedChange,
  type AuditEntry,
  type AuditOutcome,
  type AuditStore,
} from './audit-log.js';
export { DropService, type DropAction, type DropPort } from './drop-controls.js';
export {
  AdminAccess,
  isAdminToken,
  SESSION_MS,
  type AdminSession,
  type AdminSessions,
} from './admin-access.js';
export { Products, type AdminProductView } from './products.js';
export { IdentityKeys, type KeyRefresh } from './identity-keys.js';
export {
  ROTATION_GRACE_HOURS,
  WebhookEndpoints,
  type DeadLetterView,
  type EndpointView,
  type Registration,
} from './webhook-endpoints.js';
export {
  challengeRefusal,
  DEFAULT_SEGMENTS,
  seedRequest,
  seedRefusal,
  seedSpecOf,
  type SeedRequest,
} from './seed-request.js';
