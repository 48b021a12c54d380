/**
 * "Fetch the identity provider's keys again now" (docs/api.md#identity): the admin's answer to
 * a key the provider withdrew (leaked), which every API process would otherwise trust until its
 * set expires. This process fetches at once (its answer says which keys it now holds), then every
 * other API process is told to; recorded in the audit log before it runs.
 */
import { audited, type AuditActor, type AuditStore } from './audit-log.js';

export interface KeyRefresh {
  /** the key ids held after the refresh; undefined from the CLI (it holds no keys) */
  kids?: string[];
  /** API processes that heard the notice (this one included, when it listens) */
  processes: number;
}

export class IdentityKeys {
  constructor(
    private readonly deps: {
      /** this process's key set; absent where no token is verified (the CLI) */
      local?: { refetch(): Promise<{ kids: string[] }> };
      /** tells every API process; resolves with how many heard it */
      announce(): Promise<number>;
      audit: AuditStore;
      /** a finished refresh whose outcome could not be written (its row stays `started`) */
      onAuditLost?: (err: unknown) => void;
    },
  ) {}

  /** @throws ProblemError 503 when this process cannot fetch the keys (nobody else is told) */
  refresh(actor: AuditActor): Promise<KeyRefresh> {
    return audited(
      this.deps.audit,
      { actor, action: 'jwks-refresh' },
      async () => {
        const held = await this.deps.local?.refetch();
        const processes = await this.deps.announce();
        return { ...(held && { kids: held.kids }), processes };
      },
      this.deps.onAuditLost,
    );
  }
}
