/** The operator's side of a drop: the audit log and the controls, recorded in it. */
import { AuditRepository } from '../db/audit-repository.js';
import { DropControls, DropStore } from '../inventory/index.js';
import { DropService, type AuditStore } from '../services/index.js';
import type { Core } from './core.js';

export function dropParts(core: Core): { audit: AuditStore; drop: DropService } {
  const audit = new AuditRepository(core.db);
  const controls = new DropControls({
    store: new DropStore(core.redis, core.keys, core.inventory.replicaWait),
    locks: core.inventory.locks,
    catalogue: core.inventory.catalogue,
  });
  const drop = new DropService({
    controls,
    audit,
    onAuditLost: (err) =>
      core.logger.warn({ err }, 'a drop control ran; its outcome was not written to the audit log'),
  });
  return { audit, drop };
}
