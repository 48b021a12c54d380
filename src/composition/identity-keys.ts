/**
 * The identity provider's keys (JWT_JWKS_URL) in an API process: failed fetches counted and
 * logged, and the "fetch them again now" notice heard (access/key-refresh-notices.ts) and sent
 * (POST /admin/jwks/refresh, `seckill jwks refresh`).
 */
import { randomUUID } from 'node:crypto';
import { Counter } from 'prom-client';
import { KeyRefreshNotices } from '../access/index.js';
import { AuditRepository } from '../db/audit-repository.js';
import { jwksOf } from '../http/jwks.js';
import { IdentityKeys } from '../services/index.js';
import type { Core } from './core.js';

function notices(core: Core): KeyRefreshNotices {
  return new KeyRefreshNotices({
    channel: core.keys.jwksRefresh(),
    subscriber: core.inventory.pubsub,
    publish: async (channel, message) => Number(await core.redis.spublish(channel, message)),
    onError: (err) =>
      core.logger.warn({ err }, 'the JWKS refresh notice is not heard yet; subscribing again'),
  });
}

const onAuditLost = (core: Core) => (err: unknown) =>
  core.logger.warn(
    { err },
    'the keys were fetched again; the outcome was not written to the audit log',
  );

/**
 * An API process's side: undefined without JWT_JWKS_URL. Listens for the notice (each process
 * refetches its own keys) until shutdown.
 */
export function apiIdentityKeys(core: Core): IdentityKeys | undefined {
  const url = core.config.auth.jwksUrl;
  if (url === undefined) return undefined;
  const keys = jwksOf(url);
  const failures =
    (core.registry.getSingleMetric('seckill_jwks_fetch_failures_total') as
      Counter<'reason'> | undefined) ??
    new Counter({
      name: 'seckill_jwks_fetch_failures_total',
      help: "Fetches of the identity provider's keys (JWT_JWKS_URL) that failed, by reason (too-large, status, invalid, timeout, network); the keys held were kept",
      labelNames: ['reason'],
      registers: [core.registry],
    });
  const stopCounting = keys.onFetchFailed((f) => {
    failures.inc({ reason: f.reason });
    core.logger.warn(
      { reason: f.reason, detail: f.detail, keptHeldKeys: f.keptHeldKeys },
      "the identity provider's keys could not be fetched",
    );
  });
  const self = randomUUID();
  const heard = notices(core);
  const stopListening = heard.listen(self, () => {
    keys.refetch().catch(() => undefined); // counted and logged by the listener above
  });
  core.lifecycle.add('jwks refresh notices', () => {
    stopListening();
    stopCounting();
  });
  return new IdentityKeys({
    local: keys,
    announce: () => heard.announce(self),
    audit: new AuditRepository(core.db),
    onAuditLost: onAuditLost(core),
  });
}

/** The CLI's side: it holds no keys, it only tells the API processes. */
export function cliIdentityKeys(core: Core): IdentityKeys {
  return new IdentityKeys({
    announce: () => notices(core).announce('cli'),
    audit: new AuditRepository(core.db),
    onAuditLost: onAuditLost(core),
  });
}
