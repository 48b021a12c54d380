/**
 * The operator's controls of a drop (docs/operations.md#running-a-drop), each recorded in the
 * audit log before it runs (audit-log.ts): pause, resume, end now, the room's pace, and units put
 * on sale or taken off. What they do to the sale is inventory's (inventory/drop/controls.ts).
 */
import type { DropChange, UnitsChange } from '../../inventory/index.js';
import { audited, type AuditActor, type AuditStore } from './audit-log.js';

/** The controls themselves (inventory's DropControls). */
export interface DropPort {
  pause(productId: string): Promise<DropChange>;
  resume(productId: string): Promise<DropChange>;
  end(productId: string): Promise<DropChange & { endsAt: number }>;
  pace(
    productId: string,
    to: { admitPerSecond?: number | undefined; maxActive?: number | undefined },
  ): Promise<DropChange & { waitingRoom: unknown }>;
  units(productId: string, units: number): Promise<UnitsChange>;
}

export type DropAction = 'pause' | 'resume' | 'end' | 'waiting-room' | 'units';

export class DropService {
  constructor(
    private readonly deps: {
      controls: DropPort;
      audit: AuditStore;
      /** a finished change whose outcome could not be written (its row stays `started`) */
      onAuditLost?: (err: unknown) => void;
    },
  ) {}

  pause(productId: string, actor: AuditActor): Promise<DropChange> {
    return this.run(actor, 'pause', productId, {}, () => this.deps.controls.pause(productId));
  }

  resume(productId: string, actor: AuditActor): Promise<DropChange> {
    return this.run(actor, 'resume', productId, {}, () => this.deps.controls.resume(productId));
  }

  end(productId: string, actor: AuditActor): Promise<DropChange & { endsAt: number }> {
    return this.run(actor, 'end', productId, {}, () => this.deps.controls.end(productId));
  }

  pace(
    productId: string,
    to: { admitPerSecond?: number | undefined; maxActive?: number | undefined },
    actor: AuditActor,
  ): Promise<DropChange & { waitingRoom: unknown }> {
    return this.run(actor, 'waiting-room', productId, to, () =>
      this.deps.controls.pace(productId, to),
    );
  }

  /** `units` > 0 puts that many on sale, < 0 takes up to that many unsold ones off. */
  units(productId: string, units: number, actor: AuditActor): Promise<UnitsChange> {
    const request = units > 0 ? { add: units } : { withdraw: -units };
    return this.run(actor, 'units', productId, request, () =>
      this.deps.controls.units(productId, units),
    );
  }

  private run<T>(
    actor: AuditActor,
    action: DropAction,
    productId: string,
    request: unknown,
    change: () => Promise<T>,
  ): Promise<T> {
    return audited(
      this.deps.audit,
      { actor, action, productId, request },
      change,
      this.deps.onAuditLost,
    );
  }
}
